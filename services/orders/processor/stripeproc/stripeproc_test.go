package stripeproc_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	stripe "github.com/stripe/stripe-go/v85"

	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/processor/stripeproc"
)

const testKey = "sk_test_tenantA"

// checkAccepted fails the test unless err is nil: stripe-mock answers 400
// to any request Stripe's spec would not accept, which the adapter turns
// into a RefusedError naming the fault.
func checkAccepted(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("stripe-mock refused the request: %v", err)
	}
}

// checkCommon checks what every request carries: the account's key, the
// SDK's API version, and the path under the configured base.
func checkCommon(t *testing.T, r sent, base, method, path string) {
	t.Helper()
	if r.Method != method || r.URL.Path != path {
		t.Errorf("request %s %s, want %s %s", r.Method, r.URL.Path, method, path)
	}
	if got := r.URL.Scheme + "://" + r.URL.Host; got != base {
		t.Errorf("request went to %s, want the API base %s", got, base)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want the account's key", got)
	}
	if got := r.Header.Get("Stripe-Version"); got != stripe.APIVersion {
		t.Errorf("Stripe-Version = %q, want %q", got, stripe.APIVersion)
	}
}

func TestChargeRequestsStripeAccepts(t *testing.T) {
	base := stripeMockURL(t)
	tests := []struct {
		name string
		req  processor.ChargeRequest
		want map[string]string // "" means absent
	}{
		{
			name: "one-off card, upper-case currency",
			req: processor.ChargeRequest{
				IdempotencyKey: "order-1/payment-0", AmountMinor: 2500, Currency: "USD",
				PaymentMethodID: "pm_card_visa", Description: "Gift to the General fund",
				Metadata: map[string]string{"tenant_id": "t1", "order_id": "o1"},
			},
			want: map[string]string{
				"amount": "2500", "currency": "usd", "confirm": "true", "payment_method": "pm_card_visa",
				"payment_method_types[0]": "card", "description": "Gift to the General fund",
				"metadata[tenant_id]": "t1", "metadata[order_id]": "o1",
				"customer": "", "setup_future_usage": "", "off_session": "", "automatic_payment_methods[enabled]": "",
				"mandate_data[customer_acceptance][type]": "",
			},
		},
		{
			name: "card saved for a schedule",
			req: processor.ChargeRequest{
				IdempotencyKey: "order-2/payment-0", AmountMinor: 1000, Currency: "usd",
				PaymentMethodID: "pm_card_visa", PaymentMethodType: "card", CustomerID: "cus_123", SaveForFutureUse: true,
			},
			want: map[string]string{
				"customer": "cus_123", "setup_future_usage": "off_session", "off_session": "",
				"payment_method_types[0]": "card",
			},
		},
		{
			name: "off-session installment",
			req: processor.ChargeRequest{
				IdempotencyKey: "schedule-1/installment-3", AmountMinor: 1000, Currency: "usd",
				PaymentMethodID: "pm_card_visa", CustomerID: "cus_123", OffSession: true, SaveForFutureUse: true,
			},
			want: map[string]string{"off_session": "true", "setup_future_usage": "", "customer": "cus_123"},
		},
		{
			name: "on-session bank debit with the donor's online acceptance",
			req: processor.ChargeRequest{
				IdempotencyKey: "order-3/payment-0", AmountMinor: 5000, Currency: "usd",
				PaymentMethodID: "pm_usBankAccount", PaymentMethodType: "us_bank_account", CustomerID: "cus_123",
				SaveForFutureUse: true, DonorIPAddress: "203.0.113.7", DonorUserAgent: "Mozilla/5.0",
			},
			want: map[string]string{
				"payment_method_types[0]":                               "us_bank_account",
				"mandate_data[customer_acceptance][type]":               "online",
				"mandate_data[customer_acceptance][online][ip_address]": "203.0.113.7",
				"mandate_data[customer_acceptance][online][user_agent]": "Mozilla/5.0",
				"setup_future_usage":                                    "off_session",
			},
		},
		{
			name: "off-session bank debit uses the saved mandate",
			req: processor.ChargeRequest{
				IdempotencyKey: "schedule-2/installment-1", AmountMinor: 5000, Currency: "usd",
				PaymentMethodID: "pm_usBankAccount", PaymentMethodType: "us_bank_account", CustomerID: "cus_123", OffSession: true,
			},
			want: map[string]string{
				"payment_method_types[0]": "us_bank_account", "off_session": "true",
				"mandate_data[customer_acceptance][type]": "",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, rec := newRecorded(base, testKey)
			res, err := p.Charge(context.Background(), tc.req)
			checkAccepted(t, err)
			r := rec.last(t)
			checkCommon(t, r, base, http.MethodPost, "/v1/payment_intents")
			if got := r.Header.Get("Idempotency-Key"); got != tc.req.IdempotencyKey {
				t.Errorf("Idempotency-Key = %q, want %q", got, tc.req.IdempotencyKey)
			}
			formSubset(t, r.Form, tc.want)
			// stripe-mock answers every create with its one fixture, a
			// PaymentIntent in requires_payment_method: after a
			// confirmation that is a decline.
			if !strings.HasPrefix(res.Reference, "pi_") || res.Outcome != processor.Declined {
				t.Errorf("result %+v, want a pi_ reference and Declined (stripe-mock's fixture)", res)
			}
		})
	}
}

func TestCallsStripeAccepts(t *testing.T) {
	base := stripeMockURL(t)
	ctx := context.Background()
	p, rec := newRecorded(base, testKey)

	t.Run("cancel", func(t *testing.T) {
		checkAccepted(t, p.Cancel(ctx, "pi_123", "cancel-order-1"))
		r := rec.last(t)
		checkCommon(t, r, base, http.MethodPost, "/v1/payment_intents/pi_123/cancel")
		if got := r.Header.Get("Idempotency-Key"); got != "cancel-order-1" {
			t.Errorf("Idempotency-Key = %q", got)
		}
	})
	t.Run("refund", func(t *testing.T) {
		got, err := p.Refund(ctx, processor.RefundRequest{
			IdempotencyKey: "refund-1", Reference: "pi_123", AmountMinor: 700,
			Metadata: map[string]string{"refund_id": "r1"},
		})
		checkAccepted(t, err)
		r := rec.last(t)
		checkCommon(t, r, base, http.MethodPost, "/v1/refunds")
		formSubset(t, r.Form, map[string]string{"payment_intent": "pi_123", "amount": "700", "metadata[refund_id]": "r1"})
		if r.Header.Get("Idempotency-Key") != "refund-1" {
			t.Errorf("Idempotency-Key = %q", r.Header.Get("Idempotency-Key"))
		}
		// The fixture refund has succeeded.
		if !strings.HasPrefix(got.ID, "re_") || got.Pending {
			t.Errorf("refund %+v, want a re_ id, not pending", got)
		}
	})
	t.Run("create customer", func(t *testing.T) {
		id, err := p.CreateCustomer(ctx, processor.CustomerRequest{
			IdempotencyKey: "customer-t1-42", Name: "Jane Donor", Email: "jane@example.org",
			Metadata: map[string]string{"contact_id": "42"},
		})
		checkAccepted(t, err)
		r := rec.last(t)
		checkCommon(t, r, base, http.MethodPost, "/v1/customers")
		formSubset(t, r.Form, map[string]string{"name": "Jane Donor", "email": "jane@example.org", "metadata[contact_id]": "42"})
		if r.Header.Get("Idempotency-Key") != "customer-t1-42" {
			t.Errorf("Idempotency-Key = %q", r.Header.Get("Idempotency-Key"))
		}
		if !strings.HasPrefix(id, "cus_") {
			t.Errorf("customer id %q", id)
		}
	})
	t.Run("attach", func(t *testing.T) {
		pm, err := p.AttachPaymentMethod(ctx, "pm_card_visa", "cus_123", "attach-1")
		checkAccepted(t, err)
		r := rec.last(t)
		checkCommon(t, r, base, http.MethodPost, "/v1/payment_methods/pm_card_visa/attach")
		formSubset(t, r.Form, map[string]string{"customer": "cus_123"})
		if r.Header.Get("Idempotency-Key") != "attach-1" {
			t.Errorf("Idempotency-Key = %q", r.Header.Get("Idempotency-Key"))
		}
		// stripe-mock's fixture card.
		want := processor.PaymentMethod{ID: "pm_card_visa", Type: "card", Brand: "visa", Last4: "4242", ExpMonth: 8, ExpYear: 2030, CustomerID: "cus_123"}
		if pm != want {
			t.Errorf("attach = %+v, want %+v", pm, want)
		}
	})
	t.Run("detach", func(t *testing.T) {
		checkAccepted(t, p.DetachPaymentMethod(ctx, "pm_card_visa"))
		checkCommon(t, rec.last(t), base, http.MethodPost, "/v1/payment_methods/pm_card_visa/detach")
	})
}

// TestRequestsNotSent covers requests the adapter refuses itself, before
// asking Stripe.
func TestRequestsNotSent(t *testing.T) {
	p, rec := newRecorded("http://127.0.0.1:1", testKey)
	ctx := context.Background()
	card := processor.ChargeRequest{AmountMinor: 100, Currency: "usd", PaymentMethodID: "pm_card_visa"}
	if _, err := p.Charge(ctx, card); err == nil || processor.IsUnavailable(err) {
		t.Errorf("charge without idempotency key: err %v, want a refusal before asking", err)
	}
	if _, err := p.Refund(ctx, processor.RefundRequest{Reference: "pi_1", AmountMinor: 1}); err == nil || processor.IsUnavailable(err) {
		t.Errorf("refund without idempotency key: err %v", err)
	}
	if _, err := p.CreateCustomer(ctx, processor.CustomerRequest{Name: "x"}); err == nil || processor.IsUnavailable(err) {
		t.Errorf("customer without idempotency key: err %v", err)
	}
	ach := processor.ChargeRequest{
		IdempotencyKey: "k", AmountMinor: 100, Currency: "usd", PaymentMethodID: "pm_usBankAccount",
		PaymentMethodType: "us_bank_account", DonorIPAddress: "203.0.113.7",
	}
	_, err := p.Charge(ctx, ach)
	if r, ok := processor.AsRefused(err); !ok || r.Param != "mandate_data" {
		t.Errorf("on-session bank debit without a user agent: err %v, want RefusedError on mandate_data", err)
	}
	odd := card
	odd.IdempotencyKey, odd.PaymentMethodType = "k", "sepa_debit"
	if _, err := p.Charge(ctx, odd); err == nil {
		t.Error("unsupported payment method type: no error")
	} else if _, ok := processor.AsRefused(err); !ok {
		t.Errorf("unsupported payment method type: err %v, want RefusedError", err)
	}
	if n := len(rec.all()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}

// TestDefaultAPIBase checks that an empty APIBase means Stripe, without
// letting the request leave the machine.
func TestDefaultAPIBase(t *testing.T) {
	var host string
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		host = r.URL.Scheme + "://" + r.URL.Host
		return nil, errors.New("not sent in tests")
	})
	p := stripeproc.New(stripeproc.Config{SecretKey: testKey, HTTPClient: &http.Client{Transport: rt}})
	_, err := p.CreateCustomer(context.Background(), processor.CustomerRequest{IdempotencyKey: "k"})
	if !processor.IsUnavailable(err) {
		t.Errorf("err %v, want UnavailableError", err)
	}
	if host != stripeproc.DefaultAPIBase {
		t.Errorf("request went to %q, want %q", host, stripeproc.DefaultAPIBase)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestFollowUpReadsStripeAccepts covers the reads Cancel and Detach make
// after Stripe refuses them: the refusal is answered locally (stripe-mock
// never refuses a valid cancel or detach), the read goes to stripe-mock.
func TestFollowUpReadsStripeAccepts(t *testing.T) {
	base := stripeMockURL(t)
	var reads []string
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodPost {
			body := `{"error":{"type":"invalid_request_error","message":"refused here"}}`
			return &http.Response{StatusCode: 400, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
		}
		res, err := http.DefaultTransport.RoundTrip(r)
		if err == nil {
			reads = append(reads, r.URL.Path+" "+res.Status)
		}
		return res, err
	})
	p := stripeproc.New(stripeproc.Config{APIBase: base, SecretKey: testKey, HTTPClient: &http.Client{Transport: rt}})
	ctx := context.Background()
	// stripe-mock's PaymentIntent is not canceled: the refusal stands.
	if _, ok := processor.AsRefused(p.Cancel(ctx, "pi_123", "k")); !ok {
		t.Error("cancel: want the refusal to stand")
	}
	// stripe-mock's PaymentMethod has no customer: detached already.
	if err := p.DetachPaymentMethod(ctx, "pm_123"); err != nil {
		t.Errorf("detach: %v, want success", err)
	}
	want := []string{"/v1/payment_intents/pi_123 200 OK", "/v1/payment_methods/pm_123 200 OK"}
	if strings.Join(reads, ",") != strings.Join(want, ",") {
		t.Errorf("reads %v, want %v", reads, want)
	}
}
