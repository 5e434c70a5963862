// Command goclient drives the recipe flows with the published Go client,
// clients/go, which oapi-codegen generated from /openapi.json (the e2e test
// TestClients builds this program and runs it against a live gateway). A
// flow that fails prints why and exits 1.
//
// ALMONER_URL is the gateway, ALMONER_TENANT a tenant and ALMONER_KEY a
// key of it holding every scope.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"time"

	almonerapi "github.com/almoner/almoner/clients/go"
)

func main() {
	base, tenant, key := os.Getenv("ALMONER_URL"), os.Getenv("ALMONER_TENANT"), os.Getenv("ALMONER_KEY")
	if base == "" || tenant == "" || key == "" {
		fail("ALMONER_URL, ALMONER_TENANT and ALMONER_KEY are required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := &flows{ctx: ctx, tenant: tenant}
	f.makeKey(client(base, key))
	f.api = client(base, f.key.PlainTextKey)
	f.contacts()
	f.fund()
	f.cashGift()
	f.paging()
	f.problems()
	fmt.Println("goclient: every flow passed")
}

// flows are the recipe flows, run in order; each keeps what later ones use.
type flows struct {
	ctx    context.Context
	tenant string
	api    *almonerapi.ClientWithResponses // with key
	key    *almonerapi.CreatedApiKey
	jane   almonerapi.Contact
	fundID string
	order  almonerapi.Order
}

// makeKey makes the flows' key with the operator's key, as an
// integrator's set-up script would; everything after runs with it.
func (f *flows) makeKey(admin *almonerapi.ClientWithResponses) {
	created, err := admin.CreateApiKeyWithResponse(f.ctx, f.tenant, almonerapi.CreateApiKeyRequest{
		Name: "go-client",
		Scopes: []almonerapi.ScopeName{
			"contacts:view", "contacts:create", "funds:view", "funds:manage", "orders:view", "orders:create",
		},
	})
	must(err, "create key")
	want(created.StatusCode(), http.StatusCreated, "create key", created.Body)
	f.key = created.JSON201
	if f.key.PlainTextKey == "" || !slices.Contains(f.key.Scopes, "orders:create") {
		fail("create key: %s", created.Body)
	}
	keys, err := admin.ListApiKeysWithResponse(f.ctx, f.tenant)
	must(err, "list keys")
	want(keys.StatusCode(), http.StatusOK, "list keys", keys.Body)
	if !slices.ContainsFunc(*keys.JSON200, func(k almonerapi.ApiKey) bool { return k.Id == f.key.Id }) {
		fail("list keys: %s lacks %s", keys.Body, f.key.Id)
	}
}

// contacts makes a donor with an email, and an organization so that the
// list has two pages of one, and reads the donor back.
func (f *flows) contacts() {
	jane, err := f.api.CreateContactWithResponse(f.ctx, f.tenant, almonerapi.ContactInput{
		ContactType: almonerapi.ContactInputContactTypeIndividual,
		FirstName:   ptr("Jane"), LastName: ptr("Donor"),
		Emails: &[]almonerapi.EmailInput{{
			EmailAddress: "jane@example.org", EmailType: ptr(almonerapi.EmailInputEmailTypePersonal), IsPrimary: ptr(true),
		}},
	})
	must(err, "create contact")
	want(jane.StatusCode(), http.StatusCreated, "create contact", jane.Body)
	f.jane = *jane.JSON201
	acme, err := f.api.CreateContactWithResponse(f.ctx, f.tenant, almonerapi.ContactInput{
		ContactType: almonerapi.ContactInputContactTypeOrganization, OrganizationName: ptr("Acme Foundation"),
	})
	must(err, "create organization")
	want(acme.StatusCode(), http.StatusCreated, "create organization", acme.Body)
	got, err := f.api.GetContactWithResponse(f.ctx, f.tenant, f.jane.Id)
	must(err, "get contact")
	want(got.StatusCode(), http.StatusOK, "get contact", got.Body)
	if c := got.JSON200; c.Id != f.jane.Id || c.ContactType != almonerapi.ContactContactTypeIndividual ||
		len(c.Emails) != 1 || c.Emails[0].EmailAddress != "jane@example.org" || c.LastName == nil || *c.LastName != "Donor" {
		fail("get contact: %s", got.Body)
	}
}

// fund makes a tax-deductible fund and finds it in the list.
func (f *flows) fund() {
	fund, err := f.api.CreateFundWithResponse(f.ctx, f.tenant, almonerapi.CreateFundRequest{Name: "General Fund", IsTaxDeductible: ptr(true)})
	must(err, "create fund")
	want(fund.StatusCode(), http.StatusCreated, "create fund", fund.Body)
	f.fundID = fund.JSON201.Id
	funds, err := f.api.ListFundsWithResponse(f.ctx, f.tenant)
	must(err, "list funds")
	want(funds.StatusCode(), http.StatusOK, "list funds", funds.Body)
	if !slices.ContainsFunc(*funds.JSON200, func(x almonerapi.Fund) bool { return x.Id == f.fundID && x.IsTaxDeductible }) {
		fail("list funds: %s lacks %s", funds.Body, f.fundID)
	}
}

// cashGift records a $100 cash gift and reads it back.
func (f *flows) cashGift() {
	// The Idempotency-Key header is a typed parameter (issue 35).
	order, err := f.api.CreateOrderWithResponse(f.ctx, f.tenant, &almonerapi.CreateOrderParams{IdempotencyKey: ptr("go-client-" + f.key.Id)}, almonerapi.CreateOrderRequest{
		ContactId: f.jane.Id,
		Donations: &[]almonerapi.DonationInput{{FundId: f.fundID, Amount: ptr(json.Number("100.00"))}},
		Payments:  []almonerapi.PaymentInput{{PaymentMethod: almonerapi.PaymentInputPaymentMethodCash, Amount: ptr(json.Number("100.00"))}},
	})
	must(err, "create order")
	want(order.StatusCode(), http.StatusCreated, "create order", order.Body)
	if o := order.JSON201; o.TotalAmount == nil || *o.TotalAmount != "100.00" || o.OrderStatus != "Completed" || o.ContactId != f.jane.Id {
		fail("create order: %s", order.Body)
	}
	f.order = *order.JSON201
	readOrder, err := f.api.GetOrderWithResponse(f.ctx, f.tenant, f.order.Id)
	must(err, "get order")
	want(readOrder.StatusCode(), http.StatusOK, "get order", readOrder.Body)
	if o := readOrder.JSON200; len(o.Donations) != 1 || o.Donations[0].FundId != f.fundID || o.Donations[0].Amount == nil ||
		*o.Donations[0].Amount != "100.00" || len(o.Payments) != 1 || o.Payments[0].PaymentMethod != "Cash" {
		fail("get order: %s", readOrder.Body)
	}
}

// paging lists the two contacts one per page, the second page by its
// token, and the donor's orders.
func (f *flows) paging() {
	first, err := f.api.ListContactsWithResponse(f.ctx, f.tenant, &almonerapi.ListContactsParams{PageSize: ptr(int32(1))})
	must(err, "list contacts")
	want(first.StatusCode(), http.StatusOK, "list contacts", first.Body)
	if p := first.JSON200; p.TotalCount != 2 || len(p.Items) != 1 || p.NextPageToken == "" {
		fail("list contacts, page 1: %s", first.Body)
	}
	second, err := f.api.ListContactsWithResponse(f.ctx, f.tenant, &almonerapi.ListContactsParams{PageSize: ptr(int32(1)), PageToken: ptr(first.JSON200.NextPageToken)})
	must(err, "list contacts, page 2")
	want(second.StatusCode(), http.StatusOK, "list contacts, page 2", second.Body)
	if p := second.JSON200; len(p.Items) != 1 || p.Items[0].Id == first.JSON200.Items[0].Id || p.NextPageToken != "" {
		fail("list contacts, page 2: %s", second.Body)
	}
	orders, err := f.api.ListOrdersWithResponse(f.ctx, f.tenant, &almonerapi.ListOrdersParams{ContactId: ptr(f.jane.Id), PageSize: ptr(int32(1))})
	must(err, "list orders")
	want(orders.StatusCode(), http.StatusOK, "list orders", orders.Body)
	if p := orders.JSON200; p.TotalCount != 1 || len(p.Items) != 1 || p.Items[0].Id != f.order.Id {
		fail("list orders: %s", orders.Body)
	}
}

// problems reads a 400 (a contact without its type, the property in
// errors) and a 404 (a contact that does not exist) as problem documents.
func (f *flows) problems() {
	bad, err := f.api.CreateContactWithResponse(f.ctx, f.tenant, almonerapi.ContactInput{LastName: ptr("Typeless")})
	must(err, "create contact without a type")
	want(bad.StatusCode(), http.StatusBadRequest, "create contact without a type", bad.Body)
	if p := bad.ApplicationproblemJSON400; p == nil || p.Status != 400 || p.Errors == nil || len((*p.Errors)["ContactType"]) == 0 {
		fail("400: %s", bad.Body)
	}
	missing, err := f.api.GetContactWithResponse(f.ctx, f.tenant, 987654321)
	must(err, "get a missing contact")
	want(missing.StatusCode(), http.StatusNotFound, "get a missing contact", missing.Body)
	if p := missing.ApplicationproblemJSON404; p == nil || p.Status != 404 || p.Type == "" {
		fail("404: %s", missing.Body)
	}
}

// client is a generated client that sends key in X-Api-Key.
func client(base, key string) *almonerapi.ClientWithResponses {
	c, err := almonerapi.NewClientWithResponses(base, almonerapi.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("X-Api-Key", key)
		return nil
	}))
	must(err, "new client")
	return c
}

func ptr[T any](v T) *T { return &v }

func must(err error, what string) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

func want(got, status int, what string, body []byte) {
	if got != status {
		fail("%s: status %d, want %d: %s", what, got, status, body)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "goclient: "+format+"\n", args...)
	os.Exit(1)
}
