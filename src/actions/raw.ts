import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { presentOpcode } from "../present/v3/transaction.ts";

// An `actions` row as the API reads it, and toncenter's RawAction: the Go struct ScanRawAction fills from the
// actions SELECT (ton-index-go index/models/actions.go). An action whose type the API cannot render is returned
// with `raw_action` = that struct serialised by encoding/json without json tags, i.e. Go field names as keys, in
// declaration order, every field present (null when NULL). The descriptor below is that struct, field by field,
// with the row key our SELECT gives the column under and how the value travels.
//
// Kinds: every number leaves PostgreSQL as decimal text, so no 64-bit or numeric value passes through a JS number
// on the way in.
//   text      varchar/text/tonaddr/tonhash                         → string
//   dec       numeric/bigint the Go struct holds as *string        → decimal string
//   int       numeric/bigint/integer the Go struct holds as an int → JSON number (decimal string past 2^53)
//   bool      boolean
//   opcode    bigint opcode                                        → "0x%08x" of its low 32 bits
//   texts     arrays (hashes, addresses, numeric[] as text[])      → string[]
//   currencies value_extra_currencies jsonb, every amount as text  → {id: "amount"}
//   peers / excesses  arrays of composites, built as jsonb with numeric attributes as text
//   finality  not a column: toncenter selects the constant 2 ("finalized") for everything in the database

export type RawFieldKind = "text" | "dec" | "int" | "bool" | "opcode" | "texts" | "currencies" | "peers" | "excesses" | "finality";

export const rawActionFields = [
  ["TraceId", "trace_id", "text"],
  ["ActionId", "action_id", "text"],
  ["StartLt", "start_lt", "int"],
  ["EndLt", "end_lt", "int"],
  ["StartUtime", "start_utime", "int"],
  ["EndUtime", "end_utime", "int"],
  ["TraceEndLt", "trace_end_lt", "int"],
  ["TraceEndUtime", "trace_end_utime", "int"],
  ["TraceMcSeqnoEnd", "trace_mc_seqno_end", "int"],
  ["Source", "source", "text"],
  ["SourceSecondary", "source_secondary", "text"],
  ["Destination", "destination", "text"],
  ["DestinationSecondary", "destination_secondary", "text"],
  ["Asset", "asset", "text"],
  ["AssetSecondary", "asset_secondary", "text"],
  ["Asset2", "asset2", "text"],
  ["Asset2Secondary", "asset2_secondary", "text"],
  ["Opcode", "opcode", "opcode"],
  ["TxHashes", "tx_hashes", "texts"],
  ["Type", "type", "text"],
  ["TonTransferContent", "ton_transfer_content", "text"],
  ["TonTransferEncrypted", "ton_transfer_encrypted", "bool"],
  ["Value", "value", "dec"],
  ["Amount", "amount", "dec"],
  ["JettonTransferResponseDestination", "jetton_transfer_response_destination", "text"],
  ["JettonTransferForwardAmount", "jetton_transfer_forward_amount", "dec"],
  ["JettonTransferQueryId", "jetton_transfer_query_id", "dec"],
  ["JettonTransferCustomPayload", "jetton_transfer_custom_payload", "text"],
  ["JettonTransferForwardPayload", "jetton_transfer_forward_payload", "text"],
  ["JettonTransferComment", "jetton_transfer_comment", "text"],
  ["JettonTransferIsEncryptedComment", "jetton_transfer_is_encrypted_comment", "bool"],
  ["NFTTransferIsPurchase", "nft_transfer_is_purchase", "bool"],
  ["NFTTransferPrice", "nft_transfer_price", "dec"],
  ["NFTTransferQueryId", "nft_transfer_query_id", "dec"],
  ["NFTTransferCustomPayload", "nft_transfer_custom_payload", "text"],
  ["NFTTransferForwardPayload", "nft_transfer_forward_payload", "text"],
  ["NFTTransferForwardAmount", "nft_transfer_forward_amount", "dec"],
  ["NFTTransferResponseDestination", "nft_transfer_response_destination", "text"],
  ["NFTTransferNFTItemIndex", "nft_transfer_nft_item_index", "dec"],
  ["NFTTransferMarketplace", "nft_transfer_marketplace", "text"],
  ["NFTTransferRealPrevOwner", "nft_transfer_real_prev_owner", "text"],
  ["NFTTransferMarketplaceAddress", "nft_transfer_marketplace_address", "text"],
  ["NFTTransferPayoutAmount", "nft_transfer_payout_amount", "dec"],
  ["NFTTransferPayoutCommentEncrypted", "nft_transfer_payout_comment_encrypted", "bool"],
  ["NFTTransferPayoutCommentEncoded", "nft_transfer_payout_comment_encoded", "bool"],
  ["NFTTransferPayoutComment", "nft_transfer_payout_comment", "text"],
  ["NFTTransferRoyaltyAmount", "nft_transfer_royalty_amount", "dec"],
  ["NFTListingNFTItemIndex", "nft_listing_nft_item_index", "dec"],
  ["NFTListingFullPrice", "nft_listing_full_price", "dec"],
  ["NFTListingMarketplaceFee", "nft_listing_marketplace_fee", "dec"],
  ["NFTListingRoyaltyAmount", "nft_listing_royalty_amount", "dec"],
  ["NFTListingMarketplaceFeeFactor", "nft_listing_mp_fee_factor", "dec"],
  ["NFTListingMarketplaceFeeBase", "nft_listing_mp_fee_base", "dec"],
  ["NFTListingRoyaltyFeeBase", "nft_listing_royalty_fee_base", "dec"],
  ["NFTListingMaxBid", "nft_listing_max_bid", "dec"],
  ["NFTListingMinBid", "nft_listing_min_bid", "dec"],
  ["NFTListingMarketplaceFeeAddress", "nft_listing_marketplace_fee_address", "text"],
  ["NFTListingRoyaltyAddress", "nft_listing_royalty_address", "text"],
  ["NFTListingMarketplace", "nft_listing_marketplace", "text"],
  ["JettonSwapDex", "jetton_swap_dex", "text"],
  ["JettonSwapSender", "jetton_swap_sender", "text"],
  ["JettonSwapDexIncomingTransferAmount", "jetton_swap_in_amount", "dec"],
  ["JettonSwapDexIncomingTransferAsset", "jetton_swap_in_asset", "text"],
  ["JettonSwapDexIncomingTransferSource", "jetton_swap_in_source", "text"],
  ["JettonSwapDexIncomingTransferDestination", "jetton_swap_in_destination", "text"],
  ["JettonSwapDexIncomingTransferSourceJettonWallet", "jetton_swap_in_source_jetton_wallet", "text"],
  ["JettonSwapDexIncomingTransferDestinationJettonWallet", "jetton_swap_in_destination_jetton_wallet", "text"],
  ["JettonSwapDexOutgoingTransferAmount", "jetton_swap_out_amount", "dec"],
  ["JettonSwapDexOutgoingTransferAsset", "jetton_swap_out_asset", "text"],
  ["JettonSwapDexOutgoingTransferSource", "jetton_swap_out_source", "text"],
  ["JettonSwapDexOutgoingTransferDestination", "jetton_swap_out_destination", "text"],
  ["JettonSwapDexOutgoingTransferSourceJettonWallet", "jetton_swap_out_source_jetton_wallet", "text"],
  ["JettonSwapDexOutgoingTransferDestinationJettonWallet", "jetton_swap_out_destination_jetton_wallet", "text"],
  ["JettonSwapPeerSwaps", "jetton_swap_peer_swaps", "peers"],
  ["JettonSwapMinOutAmount", "jetton_swap_min_out_amount", "dec"],
  ["ChangeDNSRecordKey", "change_dns_record_key", "text"],
  ["ChangeDNSRecordValueSchema", "change_dns_record_value_schema", "text"],
  ["ChangeDNSRecordValue", "change_dns_record_value", "text"],
  ["ChangeDNSRecordFlags", "change_dns_record_flags", "int"],
  ["NFTMintNFTItemIndex", "nft_mint_nft_item_index", "dec"],
  ["DexWithdrawLiquidityDataDex", "dex_withdraw_dex", "text"],
  ["DexWithdrawLiquidityDataAmount1", "dex_withdraw_amount1", "dec"],
  ["DexWithdrawLiquidityDataAmount2", "dex_withdraw_amount2", "dec"],
  ["DexWithdrawLiquidityDataAsset1Out", "dex_withdraw_asset1_out", "text"],
  ["DexWithdrawLiquidityDataAsset2Out", "dex_withdraw_asset2_out", "text"],
  ["DexWithdrawLiquidityDataUserJettonWallet1", "dex_withdraw_user_jetton_wallet_1", "text"],
  ["DexWithdrawLiquidityDataUserJettonWallet2", "dex_withdraw_user_jetton_wallet_2", "text"],
  ["DexWithdrawLiquidityDataDexJettonWallet1", "dex_withdraw_dex_jetton_wallet_1", "text"],
  ["DexWithdrawLiquidityDataDexJettonWallet2", "dex_withdraw_dex_jetton_wallet_2", "text"],
  ["DexWithdrawLiquidityDataLpTokensBurnt", "dex_withdraw_lp_tokens_burnt", "dec"],
  ["DexWithdrawLiquidityDataBurnedNFTIndex", "dex_withdraw_burned_nft_index", "dec"],
  ["DexWithdrawLiquidityDataBurnedNFTAddress", "dex_withdraw_burned_nft_address", "text"],
  ["DexWithdrawLiquidityDataTickLower", "dex_withdraw_tick_lower", "dec"],
  ["DexWithdrawLiquidityDataTickUpper", "dex_withdraw_tick_upper", "dec"],
  ["DexDepositLiquidityDataDex", "dex_deposit_dex", "text"],
  ["DexDepositLiquidityDataAmount1", "dex_deposit_amount1", "dec"],
  ["DexDepositLiquidityDataAmount2", "dex_deposit_amount2", "dec"],
  ["DexDepositLiquidityDataAsset1", "dex_deposit_asset1", "text"],
  ["DexDepositLiquidityDataAsset2", "dex_deposit_asset2", "text"],
  ["DexDepositLiquidityDataUserJettonWallet1", "dex_deposit_user_jetton_wallet_1", "text"],
  ["DexDepositLiquidityDataUserJettonWallet2", "dex_deposit_user_jetton_wallet_2", "text"],
  ["DexDepositLiquidityDataLpTokensMinted", "dex_deposit_lp_tokens_minted", "dec"],
  ["DexDepositLiquidityDataTargetAsset1", "dex_deposit_target_asset_1", "text"],
  ["DexDepositLiquidityDataTargetAsset2", "dex_deposit_target_asset_2", "text"],
  ["DexDepositLiquidityDataTargetAmount1", "dex_deposit_target_amount_1", "dec"],
  ["DexDepositLiquidityDataTargetAmount2", "dex_deposit_target_amount_2", "dec"],
  ["DexDepositLiquidityDataVaultExcesses", "dex_deposit_vault_excesses", "excesses"],
  ["DexDepositLiquidityDataTickLower", "dex_deposit_tick_lower", "dec"],
  ["DexDepositLiquidityDataTickUpper", "dex_deposit_tick_upper", "dec"],
  ["DexDepositLiquidityDataNFTIndex", "dex_deposit_nft_index", "dec"],
  ["DexDepositLiquidityDataNFTAddress", "dex_deposit_nft_address", "text"],
  ["StakingDataProvider", "staking_provider", "text"],
  ["StakingDataTsNft", "staking_ts_nft", "text"],
  ["StakingDataTokensBurnt", "staking_tokens_burnt", "dec"],
  ["StakingDataTokensMinted", "staking_tokens_minted", "dec"],
  ["Success", "success", "bool"],
  ["Finality", "finality", "finality"],
  ["TraceExternalHash", "trace_external_hash", "text"],
  ["TraceExternalHashNorm", "trace_external_hash_norm", "text"],
  ["ExtraCurrencies", "value_extra_currencies", "currencies"],
  ["MultisigCreateOrderQueryId", "multisig_create_order_query_id", "dec"],
  ["MultisigCreateOrderOrderSeqno", "multisig_create_order_order_seqno", "dec"],
  ["MultisigCreateOrderIsCreatedBySigner", "multisig_create_order_is_created_by_signer", "bool"],
  ["MultisigCreateOrderIsSignedByCreator", "multisig_create_order_is_signed_by_creator", "bool"],
  ["MultisigCreateOrderCreatorIndex", "multisig_create_order_creator_index", "int"],
  ["MultisigCreateOrderExpirationDate", "multisig_create_order_expiration_date", "int"],
  ["MultisigCreateOrderOrderBoc", "multisig_create_order_order_boc", "text"],
  ["MultisigApproveSignerIndex", "multisig_approve_signer_index", "int"],
  ["MultisigApproveExitCode", "multisig_approve_exit_code", "int"],
  ["MultisigExecuteQueryId", "multisig_execute_query_id", "dec"],
  ["MultisigExecuteOrderSeqno", "multisig_execute_order_seqno", "dec"],
  ["MultisigExecuteExpirationDate", "multisig_execute_expiration_date", "int"],
  ["MultisigExecuteApprovalsNum", "multisig_execute_approvals_num", "int"],
  ["MultisigExecuteSignersHash", "multisig_execute_signers_hash", "text"],
  ["MultisigExecuteOrderBoc", "multisig_execute_order_boc", "text"],
  ["VestingSendMessageQueryId", "vesting_send_message_query_id", "dec"],
  ["VestingSendMessageMessageBoc", "vesting_send_message_message_boc", "text"],
  ["VestingAddWhitelistQueryId", "vesting_add_whitelist_query_id", "dec"],
  ["VestingAddWhitelistAccountsAdded", "vesting_add_whitelist_accounts_added", "texts"],
  ["EvaaSupplySenderJettonWallet", "evaa_supply_sender_jetton_wallet", "text"],
  ["EvaaSupplyRecipientJettonWallet", "evaa_supply_recipient_jetton_wallet", "text"],
  ["EvaaSupplyMasterJettonWallet", "evaa_supply_master_jetton_wallet", "text"],
  ["EvaaSupplyMaster", "evaa_supply_master", "text"],
  ["EvaaSupplyAssetId", "evaa_supply_asset_id", "text"],
  ["EvaaSupplyIsTon", "evaa_supply_is_ton", "bool"],
  ["EvaaWithdrawRecipientJettonWallet", "evaa_withdraw_recipient_jetton_wallet", "text"],
  ["EvaaWithdrawMasterJettonWallet", "evaa_withdraw_master_jetton_wallet", "text"],
  ["EvaaWithdrawMaster", "evaa_withdraw_master", "text"],
  ["EvaaWithdrawFailReason", "evaa_withdraw_fail_reason", "text"],
  ["EvaaWithdrawAssetId", "evaa_withdraw_asset_id", "text"],
  ["EvaaLiquidateFailReason", "evaa_liquidate_fail_reason", "text"],
  ["EvaaLiquidateDebtAmount", "evaa_liquidate_debt_amount", "dec"],
  ["EvaaLiquidateAssetId", "evaa_liquidate_asset_id", "text"],
  ["JvaultClaimClaimedJettons", "jvault_claim_claimed_jettons", "texts"],
  ["JvaultClaimClaimedAmounts", "jvault_claim_claimed_amounts", "texts"],
  ["JvaultStakePeriod", "jvault_stake_period", "int"],
  ["JvaultStakeMintedStakeJettons", "jvault_stake_minted_stake_jettons", "dec"],
  ["JvaultStakeStakeWallet", "jvault_stake_stake_wallet", "text"],
  ["ToncoDeployPoolJetton0RouterWallet", "tonco_deploy_pool_jetton0_router_wallet", "text"],
  ["ToncoDeployPoolJetton1RouterWallet", "tonco_deploy_pool_jetton1_router_wallet", "text"],
  ["ToncoDeployPoolJetton0Minter", "tonco_deploy_pool_jetton0_minter", "text"],
  ["ToncoDeployPoolJetton1Minter", "tonco_deploy_pool_jetton1_minter", "text"],
  ["ToncoDeployPoolTickSpacing", "tonco_deploy_pool_tick_spacing", "dec"],
  ["ToncoDeployPoolInitialPriceX96", "tonco_deploy_pool_initial_price_x96", "dec"],
  ["ToncoDeployPoolProtocolFee", "tonco_deploy_pool_protocol_fee", "dec"],
  ["ToncoDeployPoolLpFeeBase", "tonco_deploy_pool_lp_fee_base", "dec"],
  ["ToncoDeployPoolLpFeeCurrent", "tonco_deploy_pool_lp_fee_current", "dec"],
  ["ToncoDeployPoolPoolActive", "tonco_deploy_pool_pool_active", "bool"],
  ["CoffeeCreatePoolAmount1", "coffee_create_pool_amount_1", "dec"],
  ["CoffeeCreatePoolAmount2", "coffee_create_pool_amount_2", "dec"],
  ["CoffeeCreatePoolInitiator1", "coffee_create_pool_initiator_1", "text"],
  ["CoffeeCreatePoolInitiator2", "coffee_create_pool_initiator_2", "text"],
  ["CoffeeCreatePoolProvidedAsset", "coffee_create_pool_provided_asset", "text"],
  ["CoffeeCreatePoolLpTokensMinted", "coffee_create_pool_lp_tokens_minted", "dec"],
  ["CoffeeCreatePoolPoolCreatorContract", "coffee_create_pool_pool_creator_contract", "text"],
  ["CoffeeStakingDepositMintedItemAddress", "coffee_staking_deposit_minted_item_address", "text"],
  ["CoffeeStakingDepositMintedItemIndex", "coffee_staking_deposit_minted_item_index", "dec"],
  ["CoffeeStakingWithdrawNftAddress", "coffee_staking_withdraw_nft_address", "text"],
  ["CoffeeStakingWithdrawNftIndex", "coffee_staking_withdraw_nft_index", "dec"],
  ["CoffeeStakingWithdrawPoints", "coffee_staking_withdraw_points", "dec"],
  ["LayerzeroSendSendRequestId", "layerzero_send_send_request_id", "int"],
  ["LayerzeroSendMsglibManager", "layerzero_send_msglib_manager", "text"],
  ["LayerzeroSendMsglib", "layerzero_send_msglib", "text"],
  ["LayerzeroSendUln", "layerzero_send_uln", "text"],
  ["LayerzeroSendNativeFee", "layerzero_send_native_fee", "int"],
  ["LayerzeroSendZroFee", "layerzero_send_zro_fee", "int"],
  ["LayerzeroSendEndpoint", "layerzero_send_endpoint", "text"],
  ["LayerzeroSendChannel", "layerzero_send_channel", "text"],
  ["LayerzeroPacketSrcOapp", "layerzero_packet_src_oapp", "text"],
  ["LayerzeroPacketDstOapp", "layerzero_packet_dst_oapp", "text"],
  ["LayerzeroPacketSrcEid", "layerzero_packet_src_eid", "int"],
  ["LayerzeroPacketDstEid", "layerzero_packet_dst_eid", "int"],
  ["LayerzeroPacketNonce", "layerzero_packet_nonce", "int"],
  ["LayerzeroPacketGuid", "layerzero_packet_guid", "text"],
  ["LayerzeroPacketMessage", "layerzero_packet_message", "text"],
  ["LayerzeroDvnVerifyNonce", "layerzero_dvn_verify_nonce", "int"],
  ["LayerzeroDvnVerifyStatus", "layerzero_dvn_verify_status", "text"],
  ["LayerzeroDvnVerifyDvn", "layerzero_dvn_verify_dvn", "text"],
  ["LayerzeroDvnVerifyProxy", "layerzero_dvn_verify_proxy", "text"],
  ["LayerzeroDvnVerifyUln", "layerzero_dvn_verify_uln", "text"],
  ["LayerzeroDvnVerifyUlnConnection", "layerzero_dvn_verify_uln_connection", "text"],
  ["CocoonWorkerPayoutPayoutType", "cocoon_worker_payout_payout_type", "text"],
  ["CocoonWorkerPayoutQueryId", "cocoon_worker_payout_query_id", "dec"],
  ["CocoonWorkerPayoutNewTokens", "cocoon_worker_payout_new_tokens", "dec"],
  ["CocoonWorkerPayoutWorkerState", "cocoon_worker_payout_worker_state", "int"],
  ["CocoonWorkerPayoutWorkerTokens", "cocoon_worker_payout_worker_tokens", "dec"],
  ["CocoonProxyPayoutQueryId", "cocoon_proxy_payout_query_id", "dec"],
  ["CocoonProxyChargeQueryId", "cocoon_proxy_charge_query_id", "dec"],
  ["CocoonProxyChargeNewTokensUsed", "cocoon_proxy_charge_new_tokens_used", "dec"],
  ["CocoonProxyChargeExpectedAddress", "cocoon_proxy_charge_expected_address", "text"],
  ["CocoonClientTopUpQueryId", "cocoon_client_top_up_query_id", "dec"],
  ["CocoonRegisterProxyQueryId", "cocoon_register_proxy_query_id", "dec"],
  ["CocoonUnregisterProxyQueryId", "cocoon_unregister_proxy_query_id", "dec"],
  ["CocoonUnregisterProxySeqno", "cocoon_unregister_proxy_seqno", "int"],
  ["CocoonClientRegisterQueryId", "cocoon_client_register_query_id", "dec"],
  ["CocoonClientRegisterNonce", "cocoon_client_register_nonce", "dec"],
  ["CocoonClientChangeSecretHashQueryId", "cocoon_client_change_secret_hash_query_id", "dec"],
  ["CocoonClientChangeSecretHashNewSecretHash", "cocoon_client_change_secret_hash_new_secret_hash", "text"],
  ["CocoonClientRequestRefundQueryId", "cocoon_client_request_refund_query_id", "dec"],
  ["CocoonClientRequestRefundViaWallet", "cocoon_client_request_refund_via_wallet", "bool"],
  ["CocoonGrantRefundQueryId", "cocoon_grant_refund_query_id", "dec"],
  ["CocoonGrantRefundNewTokensUsed", "cocoon_grant_refund_new_tokens_used", "dec"],
  ["CocoonGrantRefundExpectedAddress", "cocoon_grant_refund_expected_address", "text"],
  ["CocoonClientIncreaseStakeQueryId", "cocoon_client_increase_stake_query_id", "dec"],
  ["CocoonClientIncreaseStakeNewStake", "cocoon_client_increase_stake_new_stake", "dec"],
  ["CocoonClientWithdrawQueryId", "cocoon_client_withdraw_query_id", "dec"],
  ["CocoonClientWithdrawWithdrawAmount", "cocoon_client_withdraw_withdraw_amount", "dec"],
  ["AncestorType", "ancestor_type", "texts"],
  ["Accounts", "accounts", "texts"],
] as const satisfies readonly (readonly [goName: string, rowKey: string, kind: RawFieldKind])[];

export interface PeerSwapJson {
  asset_in: string | null;
  amount_in: string | null;
  asset_out: string | null;
  amount_out: string | null;
}

export interface VaultExcessJson {
  asset: string | null;
  amount: string | null;
}

interface KindTypes {
  text: string | null;
  dec: string | null;
  int: string | null;
  bool: boolean | null;
  opcode: string | null;
  texts: string[] | null;
  currencies: Record<string, string> | null;
  peers: PeerSwapJson[] | null;
  excesses: VaultExcessJson[] | null;
}

type RawField = (typeof rawActionFields)[number];
type ColumnField = Exclude<RawField, readonly [string, string, "finality"]>;

/** One row of selectTraceActions' statement. */
export type StoredActionRow = { [F in ColumnField as F[1]]: KindTypes[F[2]] } & {
  /** marketplace_names.name for the marketplace (or, without one, the collection) of an NFT sale action. */
  marketplace_name: string | null;
};

/** A Go integer: a JSON number where a JS number holds it exactly, else the decimal string (never rounded). */
export function goInt(value: string | null): number | string | null {
  if (value === null) return null;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : value;
}

/** toncenter's OpcodeType: "0x%08x" of the value's low 32 bits (the index keeps opcodes signed or unsigned). */
export function opcodeHex(value: string | null): string | null {
  return value === null ? null : presentOpcode(Number(BigInt.asUintN(32, BigInt(value))));
}

function rawValue(row: StoredActionRow, key: string, kind: RawFieldKind): JsonValue {
  if (kind === "finality") return "finalized";
  const value = (row as unknown as Record<string, unknown>)[key];
  // A key missing from the row means the SELECT and this descriptor disagree: fail loudly, never print null.
  if (value === undefined) throw new Error(`actions row lacks column ${key}`);
  if (value === null) return null;
  switch (kind) {
    case "int":
      return goInt(value as string);
    case "opcode":
      return opcodeHex(value as string);
    case "peers":
      return (value as PeerSwapJson[]).map((p) => ({ AssetIn: p.asset_in, AmountIn: p.amount_in, AssetOut: p.asset_out, AmountOut: p.amount_out }));
    case "excesses":
      return (value as VaultExcessJson[]).map((e) => ({ Asset: e.asset, Amount: e.amount }));
    default:
      return value as JsonValue;
  }
}

/** The row as toncenter's RawAction JSON. */
export function rawActionJson(row: StoredActionRow): JsonObject {
  const out: JsonObject = {};
  for (const [goName, key, kind] of rawActionFields) out[goName] = rawValue(row, key, kind);
  return out;
}
