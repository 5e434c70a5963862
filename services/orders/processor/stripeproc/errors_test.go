package stripeproc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/processor/stripeproc"
)

// canned answers every request with one status and body.
func canned(t *testing.T, status int, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Request-Id", "req_test")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

var charge = processor.ChargeRequest{IdempotencyKey: "k1", AmountMinor: 2500, Currency: "usd", PaymentMethodID: "pm_card_visa"}

func TestChargeOutcomes(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   processor.ChargeResult
	}{
		{"succeeded", 200, `{"id":"pi_1","object":"payment_intent","status":"succeeded"}`,
			processor.ChargeResult{Reference: "pi_1", Outcome: processor.Succeeded}},
		{"processing", 200, `{"id":"pi_2","object":"payment_intent","status":"processing"}`,
			processor.ChargeResult{Reference: "pi_2", Outcome: processor.Processing}},
		{"requires action", 200, `{"id":"pi_3","object":"payment_intent","status":"requires_action","client_secret":"pi_3_secret_x","next_action":{"type":"use_stripe_sdk"}}`,
			processor.ChargeResult{Reference: "pi_3", Outcome: processor.RequiresAction, ClientSecret: "pi_3_secret_x"}},
		{"failed confirmation", 200, `{"id":"pi_4","object":"payment_intent","status":"requires_payment_method","last_payment_error":{"type":"card_error","code":"card_declined","decline_code":"do_not_honor","message":"Your card was declined."}}`,
			processor.ChargeResult{Reference: "pi_4", Outcome: processor.Declined, DeclineCode: "do_not_honor", Message: "Your card was declined."}},
		{"failed confirmation without a reason", 200, `{"id":"pi_5","object":"payment_intent","status":"requires_payment_method"}`,
			processor.ChargeResult{Reference: "pi_5", Outcome: processor.Declined, Message: "The payment was declined."}},
		{"card error with decline code", 402, `{"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds","message":"Your card has insufficient funds.","payment_intent":{"id":"pi_6","object":"payment_intent","status":"requires_payment_method"}}}`,
			processor.ChargeResult{Reference: "pi_6", Outcome: processor.Declined, DeclineCode: "insufficient_funds", Message: "Your card has insufficient funds."}},
		{"authentication required off session", 402, `{"error":{"type":"card_error","code":"authentication_required","message":"Your card was declined. This transaction requires authentication.","payment_intent":{"id":"pi_7","object":"payment_intent","status":"requires_payment_method"}}}`,
			processor.ChargeResult{Reference: "pi_7", Outcome: processor.Declined, DeclineCode: "authentication_required", Message: "Your card was declined. This transaction requires authentication."}},
		{"card error without a PaymentIntent", 402, `{"error":{"type":"card_error","code":"expired_card","message":"Your card has expired."}}`,
			processor.ChargeResult{Outcome: processor.Declined, DeclineCode: "expired_card", Message: "Your card has expired."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := stripeproc.New(stripeproc.Config{APIBase: canned(t, tc.status, tc.body), SecretKey: testKey})
			got, err := p.Charge(context.Background(), charge)
			if err != nil {
				t.Fatalf("err %v", err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestChargeUnexpectedStatus(t *testing.T) {
	p := stripeproc.New(stripeproc.Config{APIBase: canned(t, 200, `{"id":"pi_1","object":"payment_intent","status":"requires_capture"}`), SecretKey: testKey})
	_, err := p.Charge(context.Background(), charge)
	if err == nil || processor.IsUnavailable(err) {
		t.Fatalf("err %v, want an error that is not Unavailable", err)
	}
	if _, ok := processor.AsRefused(err); ok {
		t.Errorf("err %v is a RefusedError", err)
	}
}

func TestErrorMapping(t *testing.T) {
	// The secret below stands for what must never reach a client.
	const secret = "SECRET-BODY-TEXT"
	tests := []struct {
		name        string
		status      int
		body        string
		unavailable bool
		refused     *processor.RefusedError
	}{
		{"resource missing", 400, `{"error":{"type":"invalid_request_error","code":"resource_missing","param":"payment_method","message":"No such PaymentMethod: 'pm_x'"}}`,
			false, &processor.RefusedError{Code: "resource_missing", Param: "payment_method", Message: "No such PaymentMethod: 'pm_x'"}},
		{"not found", 404, `{"error":{"type":"invalid_request_error","code":"resource_missing","param":"id","message":"No such payment_intent: 'pi_x'"}}`,
			false, &processor.RefusedError{Code: "resource_missing", Param: "id", Message: "No such payment_intent: 'pi_x'"}},
		{"refund too large", 400, `{"error":{"type":"invalid_request_error","code":"amount_too_large","param":"amount","message":"Refund amount ($30.00) is greater than unrefunded amount on charge ($25.00)"}}`,
			false, &processor.RefusedError{Code: "amount_too_large", Param: "amount", Message: "Refund amount ($30.00) is greater than unrefunded amount on charge ($25.00)"}},
		{"invalid request without code", 400, `{"error":{"type":"invalid_request_error","message":"Received unknown parameter: bogus"}}`,
			false, &processor.RefusedError{Code: "invalid_request_error", Message: "Received unknown parameter: bogus"}},
		{"idempotency key reused with other parameters", 400, `{"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters they were first used with. ` + secret + `"}}`,
			false, &processor.RefusedError{Code: "idempotency_error", Message: "The idempotency key was already used for a different request."}},
		{"bad key", 401, `{"error":{"type":"invalid_request_error","message":"Invalid API Key provided: sk_test_****` + secret + `"}}`,
			false, &processor.RefusedError{Code: "authentication_failed", Message: "The Stripe account's secret key was not accepted."}},
		{"restricted key", 403, `{"error":{"type":"invalid_request_error","message":"The provided key 'rk_test_***` + secret + `' does not have the required permissions"}}`,
			false, &processor.RefusedError{Code: "permission_denied", Message: "The Stripe account's key may not make this request."}},
		{"api error", 500, `{"error":{"type":"api_error","message":"` + secret + `"}}`, true, nil},
		{"bad gateway page", 502, `<html>` + secret + `</html>`, true, nil},
		{"service unavailable", 503, `{"error":{"type":"api_error"}}`, true, nil},
		{"rate limit", 429, `{"error":{"type":"invalid_request_error","code":"rate_limit","message":"` + secret + `"}}`, true, nil},
		{"lock timeout", 429, `{"error":{"type":"invalid_request_error","code":"lock_timeout","message":"` + secret + `"}}`, true, nil},
		{"idempotent request in flight", 409, `{"error":{"type":"idempotency_error","code":"idempotency_key_in_use","message":"` + secret + `"}}`, true, nil},
		{"success that is not JSON", 200, secret, true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := stripeproc.New(stripeproc.Config{APIBase: canned(t, tc.status, tc.body), SecretKey: testKey})
			_, err := p.Refund(context.Background(), processor.RefundRequest{IdempotencyKey: "k", Reference: "pi_1", AmountMinor: 100})
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q carries Stripe's text", err)
			}
			if got := processor.IsUnavailable(err); got != tc.unavailable {
				t.Errorf("IsUnavailable = %v, want %v (err %v)", got, tc.unavailable, err)
			}
			r, ok := processor.AsRefused(err)
			if tc.refused == nil {
				if ok {
					t.Errorf("RefusedError %+v, want none", r)
				}
				return
			}
			if !ok || *r != *tc.refused {
				t.Errorf("err %#v, want RefusedError %+v", err, tc.refused)
			}
		})
	}
}

// TestCardErrorOutsideCharge: a card error on attach is a refusal of the
// request, not a charge outcome.
func TestCardErrorOutsideCharge(t *testing.T) {
	p := stripeproc.New(stripeproc.Config{APIBase: canned(t, 402, `{"error":{"type":"card_error","code":"incorrect_cvc","param":"cvc","message":"Your card's security code is incorrect."}}`), SecretKey: testKey})
	_, err := p.AttachPaymentMethod(context.Background(), "pm_1", "cus_1", "k")
	r, ok := processor.AsRefused(err)
	if !ok || r.Code != "incorrect_cvc" || r.Param != "cvc" {
		t.Errorf("err %v, want RefusedError incorrect_cvc", err)
	}
}

func TestUnreachable(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		base := srv.URL
		srv.Close()
		p := stripeproc.New(stripeproc.Config{APIBase: base, SecretKey: testKey})
		_, err := p.Charge(context.Background(), charge)
		if !processor.IsUnavailable(err) {
			t.Errorf("err %v, want UnavailableError", err)
		}
	})
	slow := func(t *testing.T) string {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(func() { close(release); srv.Close() })
		return srv.URL
	}
	t.Run("client timeout", func(t *testing.T) {
		p := stripeproc.New(stripeproc.Config{APIBase: slow(t), SecretKey: testKey, HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}})
		_, err := p.Charge(context.Background(), charge)
		if !processor.IsUnavailable(err) {
			t.Errorf("err %v, want UnavailableError", err)
		}
	})
	t.Run("context deadline", func(t *testing.T) {
		p := stripeproc.New(stripeproc.Config{APIBase: slow(t), SecretKey: testKey})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := p.Cancel(ctx, "pi_1", "k")
		if !processor.IsUnavailable(err) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err %v, want UnavailableError wrapping the deadline", err)
		}
	})
}

// script answers each request by its method and path; 599 to others.
type script map[string]struct {
	status int
	body   string
}

func (s script) serve(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := s[r.Method+" "+r.URL.Path]
		if !ok {
			w.WriteHeader(599)
			return
		}
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestCancelAlreadyCanceled(t *testing.T) {
	const unexpected = `{"error":{"type":"invalid_request_error","code":"payment_intent_unexpected_state","message":"You cannot cancel this PaymentIntent because it has a status of %s."%s}}`
	pi := func(status string) string {
		return `,"payment_intent":{"id":"pi_1","object":"payment_intent","status":"` + status + `"}`
	}
	tests := []struct {
		name    string
		s       script
		refused bool
	}{
		{"canceled, said in the error", script{"POST /v1/payment_intents/pi_1/cancel": {400, sprintf(unexpected, "canceled", pi("canceled"))}}, false},
		{"canceled, found by asking", script{
			"POST /v1/payment_intents/pi_1/cancel": {400, sprintf(unexpected, "canceled", "")},
			"GET /v1/payment_intents/pi_1":         {200, `{"id":"pi_1","object":"payment_intent","status":"canceled"}`},
		}, false},
		{"succeeded cannot be canceled", script{"POST /v1/payment_intents/pi_1/cancel": {400, sprintf(unexpected, "succeeded", pi("succeeded"))}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.s.serve(t)
			err := stripeproc.New(stripeproc.Config{APIBase: base, SecretKey: testKey}).Cancel(context.Background(), "pi_1", "k")
			if _, ok := processor.AsRefused(err); ok != tc.refused || (!tc.refused && err != nil) {
				t.Errorf("err %v, want refused %v", err, tc.refused)
			}
		})
	}
}

func TestDetachAlreadyDetached(t *testing.T) {
	const notAttached = `{"error":{"type":"invalid_request_error","message":"The payment method you provided is not attached to a customer so detachment is impossible."}}`
	tests := []struct {
		name    string
		s       script
		refused bool
	}{
		{"detached", script{
			"POST /v1/payment_methods/pm_1/detach": {400, notAttached},
			"GET /v1/payment_methods/pm_1":         {200, `{"id":"pm_1","object":"payment_method","type":"card","customer":null}`},
		}, false},
		{"refused while attached", script{
			"POST /v1/payment_methods/pm_1/detach": {400, `{"error":{"type":"invalid_request_error","message":"Something else."}}`},
			"GET /v1/payment_methods/pm_1":         {200, `{"id":"pm_1","object":"payment_method","type":"card","customer":"cus_1"}`},
		}, true},
		{"no such method", script{
			"POST /v1/payment_methods/pm_1/detach": {404, `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such PaymentMethod: 'pm_1'"}}`},
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.s.serve(t)
			err := stripeproc.New(stripeproc.Config{APIBase: base, SecretKey: testKey}).DetachPaymentMethod(context.Background(), "pm_1")
			if _, ok := processor.AsRefused(err); ok != tc.refused || (!tc.refused && err != nil) {
				t.Errorf("err %v, want refused %v", err, tc.refused)
			}
		})
	}
}

func TestRefundStatuses(t *testing.T) {
	tests := []struct {
		body    string
		want    processor.Refund
		refused bool
	}{
		{`{"id":"re_1","object":"refund","status":"succeeded"}`, processor.Refund{ID: "re_1"}, false},
		{`{"id":"re_2","object":"refund","status":"pending"}`, processor.Refund{ID: "re_2", Pending: true}, false},
		{`{"id":"re_3","object":"refund","status":"failed","failure_reason":"lost_or_stolen_card"}`, processor.Refund{}, true},
	}
	for _, tc := range tests {
		p := stripeproc.New(stripeproc.Config{APIBase: canned(t, 200, tc.body), SecretKey: testKey})
		got, err := p.Refund(context.Background(), processor.RefundRequest{IdempotencyKey: "k", Reference: "pi_1", AmountMinor: 100})
		if _, ok := processor.AsRefused(err); ok != tc.refused || (!tc.refused && err != nil) || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v, refused %v", tc.body, got, err, tc.want, tc.refused)
		}
	}
}

func TestAttachBankAccount(t *testing.T) {
	p := stripeproc.New(stripeproc.Config{APIBase: canned(t, 200, `{"id":"pm_b","object":"payment_method","type":"us_bank_account","customer":"cus_1","us_bank_account":{"bank_name":"STRIPE TEST BANK","last4":"6789"}}`), SecretKey: testKey})
	got, err := p.AttachPaymentMethod(context.Background(), "pm_b", "cus_1", "k")
	want := processor.PaymentMethod{ID: "pm_b", Type: "us_bank_account", Brand: "STRIPE TEST BANK", Last4: "6789", CustomerID: "cus_1"}
	if err != nil || got != want {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
}

// TestStripeMockRefusalMapped proves the stripe-mock tests can fail: a
// parameter Stripe does not know, slipped into a request on its way,
// comes back as stripe-mock's 400 and so as a RefusedError.
func TestStripeMockRefusalMapped(t *testing.T) {
	base := stripeMockURL(t)
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		body = append(body, []byte("&bogus_parameter=1")...)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		return http.DefaultTransport.RoundTrip(r)
	})
	p := stripeproc.New(stripeproc.Config{APIBase: base, SecretKey: testKey, HTTPClient: &http.Client{Transport: rt}})
	_, err := p.CreateCustomer(context.Background(), processor.CustomerRequest{IdempotencyKey: "k", Name: "x"})
	if _, ok := processor.AsRefused(err); !ok {
		t.Errorf("err %v, want RefusedError from stripe-mock", err)
	}
}

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
