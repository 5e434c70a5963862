// Command quickstart is the README's quick start with the Go client: a
// contact, a fund, a $100 cash gift, a card gift with the sandbox's test
// token, the contact's orders, and a webhook delivery's signature checked.
// The e2e test TestClients runs it against a live server.
//
//	ALMONER_URL=http://localhost:8080 ALMONER_TENANT=<tenant id> ALMONER_KEY=<api key> go run ./examples/quickstart
//
// ALMONER_WEBHOOK_DELIVERY names a JSON file holding a delivery as a
// receiver got it ({"secret", "headers", "body"}); without it the last step
// is skipped (it needs a registered endpoint: README, Quick start).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	almoner "github.com/almoner/almoner/clients/go"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tenant := os.Getenv("ALMONER_TENANT")
	api, err := almoner.NewKeyClient(os.Getenv("ALMONER_URL"), os.Getenv("ALMONER_KEY"))
	check(err, "client")

	// A donor. contactType is required: the type has no pointer for it.
	contact, err := api.CreateContactWithResponse(ctx, tenant, almoner.ContactInput{
		ContactType: almoner.ContactInputContactTypeIndividual,
		FirstName:   ptr("Jane"), LastName: ptr("Donor"),
		Emails: &[]almoner.EmailInput{{EmailAddress: "jane@example.org", IsPrimary: ptr(true)}},
	})
	status(contact.StatusCode(), err, http.StatusCreated, "create contact", contact.Body)
	donor := contact.JSON201.Id

	// A fund: every donation line names one.
	fund, err := api.CreateFundWithResponse(ctx, tenant, almoner.CreateFundRequest{Name: "General " + time.Now().Format("150405.000"), IsTaxDeductible: ptr(true)})
	status(fund.StatusCode(), err, http.StatusCreated, "create fund", fund.Body)

	// A $100 cash gift, safe to retry with its Idempotency-Key.
	cash, err := api.CreateOrderWithResponse(ctx, tenant, &almoner.CreateOrderParams{IdempotencyKey: ptr(fmt.Sprintf("quickstart-cash-%d", donor))}, almoner.CreateOrderRequest{
		ContactId: donor,
		Donations: &[]almoner.DonationInput{{FundId: fund.JSON201.Id, Amount: ptr(json.Number("100.00"))}},
		Payments:  []almoner.PaymentInput{{PaymentMethod: almoner.PaymentInputPaymentMethodCash, Amount: ptr(json.Number("100.00"))}},
	})
	status(cash.StatusCode(), err, http.StatusCreated, "cash gift", cash.Body)
	fmt.Printf("cash gift: order %d, %s\n", cash.JSON201.OrderNumber, *cash.JSON201.TotalAmount)

	// A card gift: in the sandbox, tok_visa (or pm_card_visa) is captured
	// and pm_card_chargeDeclined is declined.
	card, err := api.CreateOrderWithResponse(ctx, tenant, &almoner.CreateOrderParams{IdempotencyKey: ptr(fmt.Sprintf("quickstart-card-%d", donor))}, almoner.CreateOrderRequest{
		ContactId: donor,
		Donations: &[]almoner.DonationInput{{FundId: fund.JSON201.Id, Amount: ptr(json.Number("50.00"))}},
		Payments:  []almoner.PaymentInput{{PaymentMethod: almoner.PaymentInputPaymentMethodCard, Amount: ptr(json.Number("50.00")), PaymentToken: ptr("tok_visa")}},
	})
	status(card.StatusCode(), err, http.StatusCreated, "card gift", card.Body)
	if p := card.JSON201.Payments; len(p) != 1 || p[0].PaymentStatus != "Captured" {
		log.Fatalf("card gift: payment not captured: %s", card.Body)
	}

	// The donor's orders, newest first.
	orders, err := api.ListOrdersWithResponse(ctx, tenant, &almoner.ListOrdersParams{ContactId: &donor})
	status(orders.StatusCode(), err, http.StatusOK, "list orders", orders.Body)
	if n := len(orders.JSON200.Items); n != 2 {
		log.Fatalf("list orders: %d orders, want 2: %s", n, orders.Body)
	}
	fmt.Printf("orders of contact %d: %d\n", donor, len(orders.JSON200.Items))

	verifyDelivery()
	fmt.Println("quickstart: done")
}

// webhookHandler is a receiver's handler: the signature is checked over
// the raw body before anything else, in constant time, and a delivery
// older than five minutes is refused.
func webhookHandler(secret string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		if _, err := body.ReadFrom(http.MaxBytesReader(w, r.Body, 1<<20)); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		if err := almoner.VerifyWebhook(secret, r.Header, body.Bytes(), almoner.DefaultWebhookTolerance); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		fmt.Printf("webhook %s verified (delivery %s)\n", r.Header.Get(almoner.HeaderWebhookEvent), r.Header.Get(almoner.HeaderWebhookDeliveryID))
		w.WriteHeader(http.StatusNoContent)
	})
}

// verifyDelivery passes a delivery the server sent through the handler,
// and the same delivery with its body changed, which must be refused.
func verifyDelivery() {
	path := os.Getenv("ALMONER_WEBHOOK_DELIVERY")
	if path == "" {
		fmt.Println("webhook: no ALMONER_WEBHOOK_DELIVERY, signature step skipped")
		return
	}
	raw, err := os.ReadFile(path)
	check(err, "read delivery")
	var d struct {
		Secret  string            `json:"secret"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	check(json.Unmarshal(raw, &d), "decode delivery")
	for _, tc := range []struct {
		body string
		want int
	}{{d.Body, http.StatusNoContent}, {d.Body + " ", http.StatusUnauthorized}} {
		req := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewBufferString(tc.body))
		for k, v := range d.Headers {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		webhookHandler(d.Secret).ServeHTTP(rec, req)
		if rec.Code != tc.want {
			log.Fatalf("webhook: status %d, want %d: %s", rec.Code, tc.want, rec.Body)
		}
	}
}

func status(got int, err error, want int, what string, body []byte) {
	check(err, what)
	if got != want {
		log.Fatalf("%s: status %d, want %d: %s", what, got, want, body)
	}
}

func check(err error, what string) {
	if err != nil {
		log.Fatalf("%s: %v", what, err)
	}
}

func ptr[T any](v T) *T { return &v }
