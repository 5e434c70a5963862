package stripeproc_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/processor/stripeproc"
)

// TestFindChargesStripeAccepts sends the search FindCharges makes to
// stripe-mock, which checks it against Stripe's spec (query required,
// limit, expand; any other parameter refused), and checks what was sent.
func TestFindChargesStripeAccepts(t *testing.T) {
	base := stripeMockURL(t)
	p, rec := newRecorded(base, testKey)
	got, err := p.FindCharges(context.Background(), "0193a0b1-tenant", "0193a0b2-order")
	checkAccepted(t, err)
	r := rec.last(t)
	checkCommon(t, r, base, http.MethodGet, "/v1/payment_intents/search")
	formSubset(t, r.Form, map[string]string{
		"query":     "metadata['tenant_id']:'0193a0b1-tenant' AND metadata['order_id']:'0193a0b2-order'",
		"limit":     "100",
		"expand[0]": "data.latest_charge",
		"page":      "",
	})
	if k := r.Header.Get("Idempotency-Key"); k != "" {
		t.Errorf("a search carries Idempotency-Key %q", k)
	}
	// stripe-mock answers with its fixture: one PaymentIntent in
	// requires_payment_method, its latest charge expanded.
	if len(got) != 1 || !strings.HasPrefix(got[0].Reference, "pi_") || got[0].Outcome != processor.Declined {
		t.Errorf("found %+v, want stripe-mock's one fixture PaymentIntent, declined", got)
	}
}

// TestFindChargesRefusedParameter shows that stripe-mock would catch a
// search parameter Stripe does not take.
func TestFindChargesRefusedParameter(t *testing.T) {
	base := stripeMockURL(t)
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		q := r.URL.Query()
		q.Set("sort", "created")
		r.URL.RawQuery = q.Encode()
		return http.DefaultTransport.RoundTrip(r)
	})
	p := stripeproc.New(stripeproc.Config{APIBase: base, SecretKey: testKey, HTTPClient: &http.Client{Transport: rt}})
	if _, err := p.FindCharges(context.Background(), "t", "o"); err == nil {
		t.Error("stripe-mock accepted an unknown search parameter")
	} else if _, ok := processor.AsRefused(err); !ok {
		t.Errorf("err %v, want a RefusedError", err)
	}
}

// TestFindChargesOutcomes maps canned search answers: each status to
// where the charge stands, the refunded amount from the expanded charge,
// and failures as every other call's.
func TestFindChargesOutcomes(t *testing.T) {
	page := func(objs ...string) string {
		return `{"object":"search_result","url":"/v1/payment_intents/search","has_more":false,"next_page":null,"data":[` + strings.Join(objs, ",") + `]}`
	}
	pi := func(id, status, extra string) string {
		return `{"id":"` + id + `","object":"payment_intent","amount":2500,"currency":"usd","status":"` + status + `"` + extra + `}`
	}
	tests := []struct {
		name    string
		status  int
		body    string
		want    []processor.FoundCharge
		wantErr func(error) bool
	}{
		{"none", 200, page(), nil, nil},
		{"every status", 200, page(
			pi("pi_1", "succeeded", `,"latest_charge":{"id":"ch_1","object":"charge","amount":2500,"amount_refunded":700}`),
			pi("pi_2", "processing", `,"latest_charge":null`),
			pi("pi_3", "requires_action", ""),
			pi("pi_4", "requires_capture", ""),
			pi("pi_5", "requires_payment_method", ""),
			pi("pi_6", "canceled", ""),
			pi("pi_7", "succeeded", `,"latest_charge":"ch_7"`)),
			[]processor.FoundCharge{
				{Reference: "pi_1", Outcome: processor.Succeeded, AmountMinor: 2500, RefundedMinor: 700, Currency: "usd"},
				{Reference: "pi_2", Outcome: processor.Processing, AmountMinor: 2500, Currency: "usd"},
				{Reference: "pi_3", Outcome: processor.RequiresAction, AmountMinor: 2500, Currency: "usd"},
				{Reference: "pi_4", Outcome: processor.RequiresAction, AmountMinor: 2500, Currency: "usd"},
				{Reference: "pi_5", Outcome: processor.Declined, AmountMinor: 2500, Currency: "usd"},
				{Reference: "pi_6", Outcome: processor.Canceled, AmountMinor: 2500, Currency: "usd"},
				{Reference: "pi_7", Outcome: processor.Succeeded, AmountMinor: 2500, Currency: "usd"},
			}, nil},
		{"stripe down", 500, `{"error":{"type":"api_error","message":"boom"}}`, nil, processor.IsUnavailable},
		{"rate limited", 429, `{"error":{"type":"invalid_request_error","code":"rate_limit","message":"slow down"}}`, nil, processor.IsUnavailable},
		{"not Stripe's JSON", 200, `<html>proxy</html>`, nil, processor.IsUnavailable},
		{"search refused", 400, `{"error":{"type":"invalid_request_error","message":"bad query"}}`, nil,
			func(err error) bool { _, ok := processor.AsRefused(err); return ok }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := stripeproc.New(stripeproc.Config{APIBase: canned(t, tc.status, tc.body), SecretKey: testKey})
			got, err := p.FindCharges(context.Background(), "t", "o")
			if tc.wantErr != nil {
				if err == nil || !tc.wantErr(err) {
					t.Fatalf("err %v (found %+v), want the mapped failure", err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("found %+v, want %+v", got, tc.want)
			}
			for i := range tc.want {
				if got[i] != tc.want[i] {
					t.Errorf("found %+v, want %+v", got[i], tc.want[i])
				}
			}
		})
	}
}
