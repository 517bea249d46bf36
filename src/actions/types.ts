// Which action types a client understands: toncenter's shortcut names (v1..v4, latest, topic groups) and their
// expansion (ton-index-go index/models/action_versioning.go, ExpandActionTypeShortcuts). The expanded list is
// what /traces filters actions by: an action is returned when its type is in the list and none of its ancestor
// actions' types is, so a client that understands a parent action does not also get its children.

const v1 = [
  "call_contract",
  "contract_deploy",
  "ton_transfer",
  "stake_deposit",
  "stake_withdrawal",
  "stake_withdrawal_request",
  "dex_deposit_liquidity",
  "jetton_transfer",
  "nft_transfer",
  "nft_mint",
  "jetton_burn",
  "jetton_mint",
  "jetton_swap",
  "change_dns",
  "delete_dns",
  "renew_dns",
  "subscribe",
  "dex_withdraw_liquidity",
  "unsubscribe",
  "election_deposit",
  "election_recover",
  "auction_bid",
  "tick_tock",
] as const;

/**
 * Shortcut name → its members; a member that is itself a shortcut name is expanded recursively. `latest` is v4:
 * the tgbtc types exist only behind their topic shortcut.
 */
export const actionTypeShortcuts: Readonly<Record<string, readonly string[]>> = {
  v1,
  v2: [
    "v1",
    "multisig_create_order",
    "multisig_approve",
    "multisig_execute",
    "vesting_send_message",
    "vesting_add_whitelist",
    "evaa_supply",
    "evaa_withdraw",
    "evaa_liquidate",
    "jvault_stake",
    "jvault_unstake",
    "jvault_claim",
    "jvault_unstake_request",
    "nft_discovery",
    "tonco_deploy_pool",
    "coffee_create_vault",
    "coffee_create_pool_creator",
    "coffee_create_pool",
    "coffee_mev_protect_hold_funds",
    "coffee_mev_protect_failed_swap",
    "coffee_staking_claim_rewards",
    "coffee_staking_deposit",
    "coffee_staking_withdraw",
    "unknown",
  ],
  v3: [
    "v2",
    "nft_put_on_sale",
    "nft_put_on_auction",
    "auction_outbid",
    "nft_cancel_sale",
    "nft_purchase",
    "nft_cancel_auction",
    "nft_finish_auction",
    "teleitem_start_auction",
    "teleitem_cancel_auction",
    "nft_update_sale",
    "dns_purchase",
    "dns_release",
    "layerzero_send",
    "layerzero_send_tokens",
    "layerzero_receive",
    "layerzero_commit_packet",
    "layerzero_dvn_verify",
  ],
  v4: [
    "v3",
    "cocoon_worker_payout",
    "cocoon_proxy_payout",
    "cocoon_proxy_charge",
    "cocoon_client_top_up",
    "cocoon_register_proxy",
    "cocoon_unregister_proxy",
    "cocoon_client_register",
    "cocoon_client_change_secret_hash",
    "cocoon_client_request_refund",
    "cocoon_grant_refund",
    "cocoon_client_increase_stake",
    "cocoon_client_withdraw",
  ],
  latest: ["v4"],
  staking: ["stake_deposit", "stake_withdrawal", "stake_withdrawal_request"],
  jettons: ["jetton_transfer", "jetton_burn", "jetton_mint"],
  nft: ["nft_transfer", "nft_mint", "auction_bid"],
  "nft.v3": [
    "nft",
    "nft_put_on_sale",
    "nft_put_on_auction",
    "auction_outbid",
    "nft_cancel_sale",
    "nft_purchase",
    "nft_cancel_auction",
    "nft_finish_auction",
    "teleitem_start_auction",
    "teleitem_cancel_auction",
    "nft_update_sale",
    "dns_purchase",
    "dns_release",
  ],
  dns: ["change_dns", "delete_dns", "renew_dns", "dns_purchase", "dns_release"],
  "dns.v2": ["dns", "dns_purchase", "dns_release"],
  multisig: ["multisig_create_order", "multisig_approve", "multisig_execute"],
  vesting: ["vesting_send_message", "vesting_add_whitelist"],
  evaa: ["evaa_supply", "evaa_withdraw", "evaa_liquidate"],
  jvault: ["jvault_stake", "jvault_unstake", "jvault_claim", "jvault_unstake_request"],
  coffee: [
    "coffee_create_vault",
    "coffee_create_pool_creator",
    "coffee_create_pool",
    "coffee_mev_protect_hold_funds",
    "coffee_staking_claim_rewards",
    "coffee_staking_deposit",
    "coffee_staking_withdraw",
  ],
  tgbtc: [
    "tgbtc_dkg_log_fallback",
    "tgbtc_new_key",
    "tgbtc_new_key_fallback",
    "tgbtc_burn",
    "tgbtc_burn_fallback",
    "tgbtc_mint",
    "tgbtc_mint_fallback",
  ],
  layerzero: ["layerzero_send", "layerzero_send_tokens", "layerzero_receive", "layerzero_commit_packet", "layerzero_dvn_verify"],
  cocoon: [
    "cocoon_worker_payout",
    "cocoon_proxy_payout",
    "cocoon_proxy_charge",
    "cocoon_client_top_up",
    "cocoon_register_proxy",
    "cocoon_unregister_proxy",
    "cocoon_client_register",
    "cocoon_client_change_secret_hash",
    "cocoon_client_request_refund",
    "cocoon_grant_refund",
    "cocoon_client_increase_stake",
    "cocoon_client_withdraw",
  ],
};

/** What a request that names no action types gets. */
export const defaultActionTypes: readonly string[] = ["latest"];

// Looked up in a Map: names come from requests, and a plain object would also answer for "constructor",
// "__proto__", "toString", ... (a literal type by that name must stay a literal type).
const shortcutMembers: ReadonlyMap<string, readonly string[]> = new Map(Object.entries(actionTypeShortcuts));

function expandInto(name: string, out: Set<string>, expanding: Set<string>): void {
  const members = shortcutMembers.get(name);
  if (members === undefined) {
    out.add(name);
    return;
  }
  if (expanding.has(name)) return;
  expanding.add(name);
  for (const member of members) expandInto(member, out, expanding);
  expanding.delete(name);
}

/**
 * The action types a request's `supported_action_types` (or X-Actions-Version) stands for: shortcut names expanded
 * recursively and dropped, any other string kept as a literal type, the v1 types always added. An empty request
 * means `latest`. Order: first appearance (toncenter's order is a Go map's, i.e. unspecified).
 */
export function expandActionTypes(requested: readonly string[]): string[] {
  const out = new Set<string>();
  const expanding = new Set<string>();
  for (const name of requested.length === 0 ? defaultActionTypes : requested) expandInto(name, out, expanding);
  expandInto("v1", out, expanding);
  return [...out];
}
