package stripeproc_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	stripe "github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/processor/stripeproc"
)

const whsec = "whsec_test_tenantA"

// eventJSON is a Stripe event as Stripe renders it.
func eventJSON(t testing.TB, id, typ, apiVersion string, object any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ, "api_version": apiVersion, "created": time.Now().Unix(),
		"livemode": false, "pending_webhooks": 1, "data": map[string]any{"object": object},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sign returns the Stripe-Signature header for payload at time at.
func sign(payload []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at}).Header
}

func TestParseEventKinds(t *testing.T) {
	pi := func(status string) map[string]any {
		return map[string]any{"id": "pi_1", "object": "payment_intent", "status": status, "amount": 2500}
	}
	failed := pi("requires_payment_method")
	failed["last_payment_error"] = map[string]any{"type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds", "message": "Your card has insufficient funds."}
	achFailed := pi("requires_payment_method")
	achFailed["last_payment_error"] = map[string]any{"type": "invalid_request_error", "code": "account_closed", "message": "The bank account has been closed."}
	charge := map[string]any{"id": "ch_1", "object": "charge", "payment_intent": "pi_1", "amount": 2500, "amount_refunded": 1500, "refunded": false}
	expandedCharge := map[string]any{"id": "ch_1", "object": "charge", "payment_intent": map[string]any{"id": "pi_1", "object": "payment_intent"}, "amount_refunded": 2500}
	dispute := map[string]any{"id": "dp_1", "object": "dispute", "charge": "ch_1", "payment_intent": "pi_1", "amount": 2500, "reason": "fraudulent", "status": "needs_response"}

	tests := []struct {
		name       string
		typ        string
		apiVersion string
		object     any
		want       processor.Event
	}{
		{"succeeded", "payment_intent.succeeded", stripe.APIVersion, pi("succeeded"),
			processor.Event{Kind: processor.EventPaymentSucceeded, Reference: "pi_1"}},
		{"failed card", "payment_intent.payment_failed", stripe.APIVersion, failed,
			processor.Event{Kind: processor.EventPaymentFailed, Reference: "pi_1", FailureCode: "insufficient_funds", FailureMessage: "Your card has insufficient funds."}},
		{"failed bank debit", "payment_intent.payment_failed", stripe.APIVersion, achFailed,
			processor.Event{Kind: processor.EventPaymentFailed, Reference: "pi_1", FailureCode: "account_closed", FailureMessage: "The bank account has been closed."}},
		{"canceled", "payment_intent.canceled", stripe.APIVersion, pi("canceled"),
			processor.Event{Kind: processor.EventPaymentCanceled, Reference: "pi_1"}},
		{"refunded", "charge.refunded", stripe.APIVersion, charge,
			processor.Event{Kind: processor.EventChargeRefunded, Reference: "pi_1", AmountRefundedMinor: 1500}},
		{"refunded, payment_intent expanded", "charge.refunded", stripe.APIVersion, expandedCharge,
			processor.Event{Kind: processor.EventChargeRefunded, Reference: "pi_1", AmountRefundedMinor: 2500}},
		{"dispute", "charge.dispute.created", stripe.APIVersion, dispute,
			processor.Event{Kind: processor.EventDisputeCreated, Reference: "pi_1", DisputeID: "dp_1"}},
		{"ignored", "customer.created", stripe.APIVersion, map[string]any{"id": "cus_1", "object": "customer"},
			processor.Event{Kind: processor.EventIgnored}},
		{"ignored, no object", "payment_intent.processing", stripe.APIVersion, nil,
			processor.Event{Kind: processor.EventIgnored}},
		{"account pinned to an older version", "charge.refunded", "2019-02-19", charge,
			processor.Event{Kind: processor.EventChargeRefunded, Reference: "pi_1", AmountRefundedMinor: 1500}},
		{"account on an older release train", "payment_intent.succeeded", "2024-06-20.acacia", pi("succeeded"),
			processor.Event{Kind: processor.EventPaymentSucceeded, Reference: "pi_1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := eventJSON(t, "evt_1", tc.typ, tc.apiVersion, tc.object)
			got, err := stripeproc.ParseEvent(body, sign(body, whsec, time.Now()), whsec)
			if err != nil {
				t.Fatalf("err %v", err)
			}
			tc.want.ID, tc.want.Type = "evt_1", tc.typ
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseEventLivemode(t *testing.T) {
	var ev map[string]any
	body := eventJSON(t, "evt_live", "payment_intent.succeeded", stripe.APIVersion, map[string]any{"id": "pi_1"})
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	ev["livemode"] = true
	body, _ = json.Marshal(ev)
	got, err := stripeproc.ParseEvent(body, sign(body, whsec, time.Now()), whsec)
	if err != nil || !got.Livemode {
		t.Errorf("got %+v, %v; want a live-mode event", got, err)
	}
}

func TestParseEventBadSignature(t *testing.T) {
	body := eventJSON(t, "evt_1", "payment_intent.succeeded", stripe.APIVersion, map[string]any{"id": "pi_1"})
	other := eventJSON(t, "evt_1", "payment_intent.succeeded", stripe.APIVersion, map[string]any{"id": "pi_2"})
	notEvent := []byte(`{"id":"evt_1","object":"list","type":"payment_intent.succeeded"}`)
	notJSON := []byte(`payment_intent.succeeded pi_1`)
	// The SDK decodes data.object as an object while verifying.
	arrayObject := eventJSON(t, "evt_1", "payment_intent.canceled", stripe.APIVersion, []any{"pi_1"})
	now := time.Now()
	tests := []struct {
		name    string
		body    []byte
		header  string
		secret  string
		wantErr bool
	}{
		{"wrong secret", body, sign(body, "whsec_other", now), whsec, true},
		{"wrong body", other, sign(body, whsec, now), whsec, true},
		{"stale timestamp", body, sign(body, whsec, now.Add(-6*time.Minute)), whsec, true},
		{"within tolerance", body, sign(body, whsec, now.Add(-4*time.Minute)), whsec, false},
		{"no header", body, "", whsec, true},
		{"malformed header", body, "t=abc,v1=00", whsec, true},
		{"only an unknown scheme", body, "t=" + itoa(now.Unix()) + ",v0=abcd", whsec, true},
		{"empty secret, signed with it", body, sign(body, "", now), "", true},
		{"signed, not an event", notEvent, sign(notEvent, whsec, now), whsec, true},
		{"signed, not JSON", notJSON, sign(notJSON, whsec, now), whsec, true},
		{"signed, data.object not an object", arrayObject, sign(arrayObject, whsec, now), whsec, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := stripeproc.ParseEvent(tc.body, tc.header, tc.secret)
			if !tc.wantErr {
				if err != nil {
					t.Errorf("err %v", err)
				}
				return
			}
			if !errors.Is(err, processor.ErrBadSignature) {
				t.Errorf("err %v, want ErrBadSignature", err)
			}
		})
	}
}

// TestParseEventIncomplete: a verified event of a known type whose object
// lacks what the type needs is an error, and not a bad signature.
func TestParseEventIncomplete(t *testing.T) {
	tests := []struct {
		typ    string
		object any
	}{
		{"payment_intent.succeeded", map[string]any{"object": "payment_intent"}},
		{"payment_intent.payment_failed", nil},
		{"charge.refunded", map[string]any{"id": "ch_1", "payment_intent": nil, "amount_refunded": 100}},
		{"charge.dispute.created", map[string]any{"id": "dp_1", "charge": "ch_1"}},
		{"charge.dispute.created", map[string]any{"payment_intent": "pi_1"}},
		{"charge.refunded", map[string]any{"id": "ch_1", "payment_intent": "pi_1", "amount_refunded": "many"}},
	}
	for _, tc := range tests {
		body := eventJSON(t, "evt_1", tc.typ, stripe.APIVersion, tc.object)
		_, err := stripeproc.ParseEvent(body, sign(body, whsec, time.Now()), whsec)
		if !errors.Is(err, stripeproc.ErrIncompleteEvent) || errors.Is(err, processor.ErrBadSignature) {
			t.Errorf("%s %v: err %v, want ErrIncompleteEvent only", tc.typ, tc.object, err)
		}
	}
}

// FuzzParseEvent feeds untrusted notifications: arbitrary bodies and
// headers, and arbitrary bodies signed with the right secret (so the
// fuzzer reaches the decoding behind the signature check). ParseEvent
// must not panic, must refuse every unsigned body, and an accepted event
// must name its id and, when it matters to orders, its PaymentIntent.
func FuzzParseEvent(f *testing.F) {
	seed := func(typ string, object any) []byte { return eventJSON(f, "evt_seed", typ, stripe.APIVersion, object) }
	for _, b := range [][]byte{
		seed("payment_intent.succeeded", map[string]any{"id": "pi_1"}),
		seed("payment_intent.payment_failed", map[string]any{"id": "pi_1", "last_payment_error": map[string]any{"code": "card_declined"}}),
		seed("charge.refunded", map[string]any{"id": "ch_1", "payment_intent": "pi_1", "amount_refunded": 10}),
		seed("charge.dispute.created", map[string]any{"id": "dp_1", "payment_intent": map[string]any{"id": "pi_1"}}),
		seed("customer.created", map[string]any{"id": "cus_1"}),
		[]byte(`{"object":"event","data":null}`),
		[]byte(`{"object":"event","id":"evt_1","type":"charge.refunded","data":{"object":{"payment_intent":7}}}`),
		[]byte(`[]`),
	} {
		f.Add(b, "", true)
		f.Add(b, "t=1,v1=00", false)
	}
	f.Fuzz(func(t *testing.T, payload []byte, header string, signIt bool) {
		if signIt {
			header = sign(payload, whsec, time.Now())
		}
		ev, err := stripeproc.ParseEvent(payload, header, whsec)
		if err != nil {
			if !signIt && !errors.Is(err, processor.ErrBadSignature) {
				t.Fatalf("unsigned body: err %v, want ErrBadSignature", err)
			}
			return
		}
		if !signIt {
			t.Fatalf("unsigned body accepted: %+v", ev)
		}
		if ev.ID == "" || ev.Type == "" {
			t.Fatalf("accepted event without id or type: %+v", ev)
		}
		if ev.Kind != processor.EventIgnored && ev.Reference == "" {
			t.Fatalf("accepted %s without a PaymentIntent: %+v", ev.Type, ev)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
