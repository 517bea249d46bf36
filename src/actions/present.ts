import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { TraceAction } from "../../gen/tonquery/v1/trace_pb.ts";
import { evaaAssetAddress } from "./evaa.ts";

// toncenter's v3 Action JSON (ton-index-go index/models/actions.go, struct Action) and the addresses an action
// contributes to address_book/metadata (index/parse/actions.go, CollectAddressesFromAction).

type Json = Record<string, unknown>;

function int(value: string | undefined): number | null {
  return value === undefined ? null : Number(value);
}

/**
 * The action as /api/v3/traces prints it, keys in toncenter's order. raw_action only for an unsupported type,
 * trace_external_hash(_norm) left out when NULL (omitempty), `finality` always "finalized" (the API selects the
 * constant for everything in the database; captures older than that field lack it).
 */
export function presentAction(action: TraceAction): Json {
  const out: Json = {
    trace_id: action.traceId,
    action_id: action.actionId,
    start_lt: action.startLt ?? null,
    end_lt: action.endLt ?? null,
    start_utime: int(action.startUtime),
    end_utime: int(action.endUtime),
    trace_end_lt: action.traceEndLt ?? null,
    trace_end_utime: int(action.traceEndUtime),
    trace_mc_seqno_end: action.traceMcSeqnoEnd ?? null,
    transactions: action.transactions,
    success: action.success,
    type: action.type,
    details: action.details ?? {},
  };
  if (action.rawAction !== undefined) out.raw_action = action.rawAction;
  if (action.traceExternalHash !== undefined) out.trace_external_hash = action.traceExternalHash;
  if (action.traceExternalHashNorm !== undefined) out.trace_external_hash_norm = action.traceExternalHashNorm;
  if (action.accounts.length > 0) out.accounts = action.accounts;
  out.finality = "finalized";
  return out;
}

// Address collection. toncenter collects from the raw row: the eight address columns and a fixed list of
// composite attributes, whatever the action's type. The typed action keeps only its details, so for each type
// the detail keys below are the ones filled from those columns/attributes (details that show addresses
// toncenter does NOT collect, e.g. nft_transfer's real_old_owner or payout_address, are left out on purpose).

const columns = ["source", "destination"];

const collectedDetailKeys: Readonly<Record<string, readonly string[]>> = {
  call_contract: columns,
  contract_deploy: columns,
  ton_transfer: columns,
  extra_currency_transfer: columns,
  auction_bid: ["bidder", "auction", "nft_item", "nft_collection"],
  change_dns: ["source", "asset", "nft_collection"],
  delete_dns: ["source", "asset", "nft_collection"],
  renew_dns: ["source", "asset", "nft_collection"],
  election_deposit: ["stake_holder"],
  election_recover: ["stake_holder"],
  jetton_burn: ["owner", "owner_jetton_wallet", "asset"],
  jetton_swap: ["sender", "asset_in", "asset_out"],
  jetton_transfer: ["asset", "sender", "receiver", "sender_jetton_wallet", "receiver_jetton_wallet", "response_destination"],
  jetton_mint: ["asset", "receiver", "receiver_jetton_wallet"],
  nft_mint: ["owner", "nft_item", "nft_collection"],
  nft_transfer: ["nft_collection", "nft_item", "old_owner", "new_owner", "response_destination"],
  nft_purchase: ["nft_collection", "nft_item", "old_owner", "new_owner", "response_destination"],
  dns_purchase: ["nft_collection", "nft_item", "new_owner"],
  nft_put_on_sale: ["nft_collection", "nft_item", "owner", "listing_address", "sale_address", "marketplace_address"],
  nft_put_on_auction: ["nft_collection", "nft_item", "owner", "listing_address", "auction_address", "marketplace_address"],
  teleitem_start_auction: ["nft_collection", "nft_item", "owner", "listing_address", "auction_address", "marketplace_address"],
  auction_outbid: ["auction_address", "bidder", "new_bidder", "nft_item", "nft_collection"],
  nft_cancel_sale: ["owner", "nft_item", "nft_collection", "sale_address"],
  nft_cancel_auction: ["owner", "nft_item", "nft_collection", "auction_address"],
  teleitem_cancel_auction: ["owner", "nft_item", "nft_collection", "auction_address"],
  nft_finish_auction: ["owner", "nft_item", "nft_collection", "auction_address"],
  dns_release: ["source", "nft_item", "nft_collection"],
  nft_update_sale: ["source", "sale_contract", "nft_address"],
  nft_discovery: ["source", "nft_item", "nft_collection"],
  stake_deposit: ["stake_holder", "pool", "asset", "source_asset"],
  stake_withdrawal: ["stake_holder", "pool", "asset"],
  stake_withdrawal_request: ["stake_holder", "pool", "asset"],
  subscribe: ["subscriber", "beneficiary", "subscription"],
  unsubscribe: ["subscriber", "beneficiary", "subscription"],
  dex_deposit_liquidity: ["asset_1", "asset_2", "source", "pool", "destination_liquidity", "target_asset_1", "target_asset_2", "nft_address"],
  dex_withdraw_liquidity: ["asset_1", "asset_2", "source", "pool", "destination_liquidity", "burnt_nft_address"],
  multisig_create_order: ["source", "destination", "destination_order"],
  multisig_approve: columns,
  multisig_execute: columns,
  vesting_send_message: ["source", "vesting", "destination"],
  vesting_add_whitelist: ["source", "vesting"],
  evaa_supply: [
    "sender_jetton_wallet",
    "recipient_jetton_wallet",
    "master_jetton_wallet",
    "master",
    "source",
    "source_wallet",
    "recipient",
    "recipient_contract",
    "asset",
  ],
  evaa_withdraw: ["recipient_jetton_wallet", "master_jetton_wallet", "master", "source", "recipient", "owner_contract", "asset"],
  evaa_liquidate: ["source", "borrower", "borrower_contract", "collateral", "asset"],
  jvault_claim: ["source", "stake_wallet", "pool"],
  jvault_stake: ["stake_wallet", "source", "source_jetton_wallet", "asset", "pool"],
  jvault_unstake: ["source", "stake_wallet", "pool", "asset", "staking_asset"],
  jvault_unstake_request: ["source", "stake_wallet", "pool", "asset", "staking_asset"],
  tgbtc_mint: ["source", "destination", "asset", "bitcoin_tx_id", "destination_wallet"],
  tgbtc_mint_fallback: ["source", "destination", "asset", "bitcoin_tx_id", "destination_wallet"],
  tgbtc_burn: ["source", "source_wallet", "destination", "asset"],
  tgbtc_burn_fallback: ["source", "source_wallet", "destination", "asset"],
  tgbtc_new_key: ["source", "pubkey", "coordinator", "pegout", "asset"],
  tgbtc_new_key_fallback: ["source", "pubkey", "coordinator", "pegout", "asset"],
  tgbtc_dkg_log_fallback: ["coordinator", "pubkey"],
  tonco_deploy_pool: ["source", "pool", "router", "jetton_minter_1", "jetton_minter_2"],
  coffee_create_pool: ["source", "source_jetton_wallet", "pool", "asset_1", "asset_2"],
  coffee_create_pool_creator: ["source", "source_jetton_wallet", "deposit_recipient", "pool_creator_contract", "asset_1", "asset_2"],
  coffee_staking_deposit: ["source", "source_jetton_wallet", "pool", "pool_jetton_wallet", "asset"],
  coffee_staking_withdraw: ["source", "source_jetton_wallet", "pool", "pool_jetton_wallet", "asset"],
  coffee_staking_claim_rewards: ["pool", "pool_jetton_wallet", "recipient", "recipient_jetton_wallet", "asset"],
  coffee_mev_protect_hold_funds: ["source", "source_jetton_wallet", "mev_contract", "mev_contract_jetton_wallet", "asset"],
  coffee_create_vault: ["source", "vault", "asset"],
  layerzero_send: ["initiator"],
  layerzero_send_tokens: ["sender", "sender_wallet", "oapp", "oapp_wallet", "asset"],
  layerzero_receive: ["sender", "oapp", "channel"],
  layerzero_commit_packet: ["sender", "endpoint", "uln", "uln_connection", "channel", "msglib_connection"],
  layerzero_dvn_verify: ["initiator"],
  cocoon_worker_payout: columns,
  cocoon_proxy_payout: columns,
  cocoon_proxy_charge: columns,
  cocoon_client_top_up: columns,
  cocoon_register_proxy: ["destination"],
  cocoon_unregister_proxy: ["destination"],
  cocoon_client_register: columns,
  cocoon_client_change_secret_hash: columns,
  cocoon_client_request_refund: columns,
  cocoon_grant_refund: columns,
  cocoon_client_increase_stake: columns,
  cocoon_client_withdraw: columns,
  tick_tock: [],
};

/** RawAction fields CollectAddressesFromAction reads, for an action shown in its raw (unsupported) form. */
const collectedRawFields = [
  "Source",
  "SourceSecondary",
  "Destination",
  "DestinationSecondary",
  "Asset",
  "AssetSecondary",
  "Asset2",
  "Asset2Secondary",
  "JettonTransferResponseDestination",
  "NFTTransferResponseDestination",
  "JettonSwapSender",
  "JettonSwapDexIncomingTransferAsset",
  "JettonSwapDexIncomingTransferSource",
  "JettonSwapDexIncomingTransferDestination",
  "JettonSwapDexIncomingTransferSourceJettonWallet",
  "JettonSwapDexIncomingTransferDestinationJettonWallet",
  "JettonSwapDexOutgoingTransferAsset",
  "JettonSwapDexOutgoingTransferSource",
  "JettonSwapDexOutgoingTransferDestination",
  "JettonSwapDexOutgoingTransferSourceJettonWallet",
  "JettonSwapDexOutgoingTransferDestinationJettonWallet",
  "DexDepositLiquidityDataAsset1",
  "DexDepositLiquidityDataAsset2",
  "DexDepositLiquidityDataTargetAsset1",
  "DexDepositLiquidityDataTargetAsset2",
  "DexWithdrawLiquidityDataAsset1Out",
  "DexWithdrawLiquidityDataAsset2Out",
  "EvaaSupplySenderJettonWallet",
  "EvaaSupplyRecipientJettonWallet",
  "EvaaSupplyMasterJettonWallet",
  "EvaaSupplyMaster",
  "EvaaWithdrawRecipientJettonWallet",
  "EvaaWithdrawMasterJettonWallet",
  "EvaaWithdrawMaster",
  "JvaultStakeStakeWallet",
  "DexDepositLiquidityDataNFTAddress",
  "DexWithdrawLiquidityDataBurnedNFTAddress",
  "ToncoDeployPoolJetton1Minter",
  "ToncoDeployPoolJetton0Minter",
];

function addString(out: Set<string>, value: JsonValue | undefined): void {
  if (typeof value === "string") out.add(value);
}

function addStrings(out: Set<string>, value: JsonValue | undefined): void {
  if (Array.isArray(value)) for (const item of value) addString(out, item);
}

function rawActionAddresses(raw: JsonObject, out: Set<string>): void {
  for (const field of collectedRawFields) addString(out, raw[field]);
  addStrings(out, raw.JvaultClaimClaimedJettons);
  const assetId = raw.EvaaLiquidateAssetId;
  // Only a type without a renderer is shown raw, and evaa_liquidate has one, so the mainnet table is enough here.
  if (typeof assetId === "string") addString(out, evaaAssetAddress(assetId, false)?.address ?? undefined);
  addStrings(out, raw.VestingAddWhitelistAccountsAdded);
}

function detailsAddresses(type: string, details: JsonObject, out: Set<string>): void {
  for (const key of collectedDetailKeys[type] ?? []) addString(out, details[key]);
  if (type === "jetton_swap") {
    for (const side of [details.dex_incoming_transfer, details.dex_outgoing_transfer]) {
      if (side === null || typeof side !== "object" || Array.isArray(side)) continue;
      for (const key of ["asset", "source", "destination", "source_jetton_wallet", "destination_jetton_wallet"]) addString(out, side[key]);
    }
  } else if (type === "jvault_claim" && Array.isArray(details.claimed_rewards)) {
    for (const reward of details.claimed_rewards) {
      if (reward !== null && typeof reward === "object" && !Array.isArray(reward)) addString(out, reward.jetton);
    }
  } else if (type === "vesting_add_whitelist") {
    addStrings(out, details.accounts_added);
  }
}

/** The raw addresses the action adds to the response's address_book and metadata lookups, deduplicated. */
export function actionAddresses(action: TraceAction): string[] {
  const out = new Set<string>();
  if (action.rawAction !== undefined) rawActionAddresses(action.rawAction, out);
  else if (action.details !== undefined) detailsAddresses(action.type, action.details, out);
  return [...out];
}
