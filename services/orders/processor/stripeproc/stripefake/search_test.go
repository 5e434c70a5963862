package stripefake_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"testing"

	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/processor/stripeproc"
)

// orderCharge is a charge of one order of one tenant, as the orders
// service makes it.
func orderCharge(key, tenant, order, pm string) processor.ChargeRequest {
	r := card(key, pm)
	r.Metadata = map[string]string{"tenant_id": tenant, "order_id": order}
	if pm == "pm_usBankAccount_success" {
		r.PaymentMethodType, r.DonorIPAddress, r.DonorUserAgent = "us_bank_account", "203.0.113.7", "Mozilla/5.0"
	}
	return r
}

// TestFindCharges: the search finds the PaymentIntents whose metadata
// names the tenant and the order, of this account only, each where it
// stands now.
func TestFindCharges(t *testing.T) {
	ctx := context.Background()
	fake, p := start(t)
	other := stripeproc.New(stripeproc.Config{APIBase: fake.URL, SecretKey: keyB})
	charge := func(p processor.Processor, r processor.ChargeRequest) string {
		t.Helper()
		res, err := p.Charge(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return res.Reference
	}
	paid := charge(p, orderCharge("o1/0", "tA", "o1", "pm_card_visa"))
	bank := charge(p, orderCharge("o1/1", "tA", "o1", "pm_usBankAccount_success"))
	secure := charge(p, orderCharge("o1/2", "tA", "o1", "pm_card_authenticationRequired"))
	declined := charge(p, orderCharge("o1/3", "tA", "o1", "pm_card_chargeDeclined"))
	cancelled := charge(p, orderCharge("o1/4", "tA", "o1", "pm_card_authenticationRequired"))
	charge(p, orderCharge("o2/0", "tA", "o2", "pm_card_visa"))         // another order
	charge(p, orderCharge("x/0", "tB", "o1", "pm_card_visa"))          // another tenant naming the same order id
	charge(other, orderCharge("o1/0", "tA", "o1", "pm_card_visa"))     // another account
	charge(p, orderCharge("q/0", "tA", "it's \\ odd", "pm_card_visa")) // a value to escape
	if _, err := p.Refund(ctx, processor.RefundRequest{IdempotencyKey: "r1", Reference: paid, AmountMinor: 700}); err != nil {
		t.Fatal(err)
	}
	if err := p.Cancel(ctx, cancelled, "c1"); err != nil {
		t.Fatal(err)
	}

	got, err := p.FindCharges(ctx, "tA", "o1")
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Reference < got[j].Reference })
	want := []processor.FoundCharge{
		{Reference: paid, Outcome: processor.Succeeded, AmountMinor: 2500, RefundedMinor: 700, Currency: "usd"},
		{Reference: bank, Outcome: processor.Processing, AmountMinor: 2500, Currency: "usd"},
		{Reference: secure, Outcome: processor.RequiresAction, AmountMinor: 2500, Currency: "usd"},
		{Reference: declined, Outcome: processor.Declined, AmountMinor: 2500, Currency: "usd"},
		{Reference: cancelled, Outcome: processor.Canceled, AmountMinor: 2500, Currency: "usd"},
	}
	sort.Slice(want, func(i, j int) bool { return want[i].Reference < want[j].Reference })
	if len(got) != len(want) {
		t.Fatalf("found %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("found %+v, want %+v", got[i], want[i])
		}
	}
	if odd, err := p.FindCharges(ctx, "tA", "it's \\ odd"); err != nil || len(odd) != 1 {
		t.Errorf("search for a quoted value: %+v, %v; want one charge", odd, err)
	}
	if none, err := p.FindCharges(ctx, "tA", "o9"); err != nil || len(none) != 0 {
		t.Errorf("search for an order without charges: %+v, %v", none, err)
	}
}

// TestSearchRequests covers what the search endpoint refuses, and its
// pages.
func TestSearchRequests(t *testing.T) {
	ctx := context.Background()
	fake, p := start(t)
	for i := range 3 {
		if _, err := p.Charge(ctx, orderCharge("p/"+string(rune('0'+i)), "tA", "paged", "pm_card_visa")); err != nil {
			t.Fatal(err)
		}
	}
	get := func(q url.Values) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, fake.URL+"/v1/payment_intents/search?"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer "+keyA)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = res.Body.Close() }()
		var body map[string]any
		_ = json.NewDecoder(res.Body).Decode(&body)
		return res.StatusCode, body
	}
	for _, tc := range []struct {
		name   string
		params url.Values
		status int
	}{
		{"no query", url.Values{}, 400},
		{"a field the fake does not index", url.Values{"query": {"status:'succeeded'"}}, 400},
		{"OR", url.Values{"query": {"metadata['a']:'1' OR metadata['b']:'2'"}}, 400},
		{"limit too large", url.Values{"query": {"metadata['a']:'1'"}, "limit": {"101"}}, 400},
		{"another expansion", url.Values{"query": {"metadata['a']:'1'"}, "expand[0]": {"data.customer"}}, 400},
		{"an unknown parameter", url.Values{"query": {"metadata['a']:'1'"}, "sort": {"created"}}, 400},
		{"fine", url.Values{"query": {"metadata['a']:'1'"}, "limit": {"100"}, "expand[0]": {"data.latest_charge"}}, 200},
	} {
		if status, body := get(tc.params); status != tc.status {
			t.Errorf("%s: %d %v, want %d", tc.name, status, body, tc.status)
		}
	}
	q := url.Values{"query": {"metadata['order_id']:'paged'"}, "limit": {"2"}}
	_, first := get(q)
	q.Set("page", first["next_page"].(string))
	_, second := get(q)
	if len(first["data"].([]any)) != 2 || first["has_more"] != true || len(second["data"].([]any)) != 1 || second["has_more"] != false {
		t.Errorf("pages %v then %v, want 2 with more, then 1", first, second)
	}
}
