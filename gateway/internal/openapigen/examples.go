package openapigen

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	webhooksv1 "github.com/almoner/almoner/pkg/api/almoner/webhooks/v1"
	"github.com/almoner/almoner/pkg/wirejson"
)

// recipe is one of the five recipes of docs/openapi.md: an operation with
// the request an integrator sends first and what it gets back. Requests
// are written as an integrator writes them (only what matters); responses
// are messages encoded by the wire codec, so they have every property the
// API sends, typed as it sends them.
type recipe struct {
	operationID string
	summary     string
	request     string
	response    proto.Message
}

const (
	exampleTenant = "0197a3c2-5b1e-7c4d-9f00-3a6e2b1c4d5e"
	exampleFund   = "0197a3c2-6d20-7a41-8b3c-1f2e3d4c5b6a"
)

var exampleTime = timestamppb.New(time.Date(2026, 4, 12, 9, 30, 0, 0, time.UTC))

func dec(s string) *typev1.Decimal { return &typev1.Decimal{Value: s} }

// recipes are the request and response examples the document carries; a
// test fails when one names an operation the document lacks.
var recipes = []recipe{
	{
		operationID: "CreateApiKey", summary: "A key for a nightly export job",
		request: `{"name": "nightly-export-job", "scopes": ["contacts:view", "donations:view"]}`,
		response: &authv1.CreatedApiKey{
			Id: "0197a3c2-7e31-7b52-9c4d-2a3b4c5d6e7f", Name: "nightly-export-job", KeyPrefix: "ak_test_3f9c2a1b",
			PlainTextKey: "ak_test_3f9c2a1b.Jm8v2QzK5tLw9XyR4nB7cD1eF6gH0iJ3", Scopes: []string{"contacts:view", "donations:view"},
		},
	},
	{
		operationID: "CreateFund", summary: "A tax-deductible fund",
		request: `{"name": "General Fund", "isTaxDeductible": true}`,
		response: &ordersv1.Fund{
			Id: exampleFund, Name: "General Fund", IsTaxDeductible: true, ProcessingFeePercent: dec("0.00"),
			IsActive: true, CreatedAt: exampleTime, UpdatedAt: exampleTime,
		},
	},
	{
		operationID: "CreateContact", summary: "A donor with an email",
		request: `{"contactType": "Individual", "firstName": "Jane", "lastName": "Donor", "emails": [{"emailAddress": "jane@example.org", "emailType": "Personal", "isPrimary": true}]}`,
		response: &contactsv1.Contact{
			Id: 1834, ContactType: "Individual", FirstName: proto.String("Jane"), LastName: proto.String("Donor"),
			Emails:   []*contactsv1.Email{{Id: 2210, EmailAddress: "jane@example.org", EmailType: "Personal", IsPrimary: true}},
			IsActive: true, CreatedAt: exampleTime, UpdatedAt: exampleTime,
			CommunicationPreferences: &contactsv1.CommunicationPreferences{},
		},
	},
	{
		operationID: "CreateOrder", summary: "A $100 cash gift",
		request: `{"contactId": 1834, "donations": [{"fundId": "` + exampleFund + `", "amount": 100.00}], "payments": [{"paymentMethod": "Cash", "amount": 100.00}], "idempotencyKey": "6f1c2b8e-3d4a-4f5b-9c6d-7e8f9a0b1c2d"}`,
		response: &ordersv1.Order{
			Id: "0197a3c2-8f42-7c63-8d5e-3b4c5d6e7f80", OrderNumber: 1, ContactId: 1834, OrderStatus: "Completed", Currency: "USD",
			DonationSubtotal: dec("100.00"), ItemSubtotal: dec("0.00"), TotalAmount: dec("100.00"),
			DeductibleAmount: dec("100.00"), RefundedAmount: dec("0.00"),
			Donations: []*ordersv1.OrderDonation{{
				Id: "0197a3c2-8f42-7c63-8d5e-3b4c5d6e7f81", FundId: exampleFund, FundName: "General Fund",
				Amount: dec("100.00"), IsTaxDeductible: true,
			}},
			Payments: []*ordersv1.OrderPayment{{
				Id: "0197a3c2-8f42-7c63-8d5e-3b4c5d6e7f82", PaymentMethod: "Cash", Amount: dec("100.00"),
				PaymentStatus: "Captured", RefundedAmount: dec("0.00"),
			}},
			BatchId: "0197a3c2-8f40-7000-8000-000000000001", CreatedAt: exampleTime, UpdatedAt: exampleTime,
		},
	},
	{
		operationID: "CreateWebhook", summary: "Order and contact events to a receiver",
		request: `{"name": "CRM sync", "url": "https://hooks.example.org/almoner", "eventTypes": ["order.created", "contact.created"]}`,
		response: &webhooksv1.CreatedWebhook{
			Id: "0197a3c2-9053-7d74-9e6f-4c5d6e7f8091", Name: "CRM sync", Url: "https://hooks.example.org/almoner",
			EventTypes: []string{"order.created", "contact.created"}, Secret: "whsec_5Jq2Lr8Tn4Vx7Zb1Cd3Fg6Hk9Mp0Rs2U",
		},
	},
}

// validationExample is the 400 of the wire reference: a contact id of 0.
const validationExample = `{"type": "/errors/validation", "title": "One or more validation errors occurred.", "status": 400, "instance": "/api/tenants/` + exampleTenant + `/orders", "errors": {"ContactId": ["Contact id must be greater than 0."]}, "traceId": "4bf92f3577b34da6a3ce929d0e0e4736"}`

// addExamples puts the recipes on their operations, and a validation
// failure on the 400.
func addExamples(doc *openapi3.T) error {
	for _, r := range recipes {
		op := findOperation(doc, r.operationID)
		if op == nil {
			return fmt.Errorf("recipe %q: no operation %s", r.summary, r.operationID)
		}
		if op.RequestBody == nil || op.RequestBody.Value.Content.Get("application/json") == nil {
			return fmt.Errorf("recipe %q: %s takes no JSON body", r.summary, r.operationID)
		}
		var req any
		if err := json.Unmarshal([]byte(r.request), &req); err != nil {
			return fmt.Errorf("recipe %q: request: %w", r.summary, err)
		}
		op.RequestBody.Value.Content.Get("application/json").Examples = openapi3.Examples{
			r.operationID: {Value: &openapi3.Example{Summary: r.summary, Value: req}},
		}
		b, err := wirejson.Marshal(r.response)
		if err != nil {
			return fmt.Errorf("recipe %q: response: %w", r.summary, err)
		}
		var resp any
		if err := json.Unmarshal(b, &resp); err != nil {
			return fmt.Errorf("recipe %q: response: %w", r.summary, err)
		}
		ok := op.Responses.Value(strconv.Itoa(http.StatusCreated))
		if ok == nil || ok.Value == nil || ok.Value.Content.Get("application/json") == nil {
			return fmt.Errorf("recipe %q: %s has no JSON 201", r.summary, r.operationID)
		}
		ok.Value.Content.Get("application/json").Examples = openapi3.Examples{
			r.operationID: {Value: &openapi3.Example{Summary: r.summary, Value: resp}},
		}
	}
	if bad := doc.Components.Responses["BadRequest"]; bad != nil {
		var v any
		if err := json.Unmarshal([]byte(validationExample), &v); err != nil {
			return fmt.Errorf("validation example: %w", err)
		}
		bad.Value.Content.Get("application/problem+json").Examples = openapi3.Examples{
			"validation": {Value: &openapi3.Example{Summary: "A contact id of 0", Value: v}},
		}
	}
	return nil
}

// findOperation returns the operation of doc with the id, or nil.
func findOperation(doc *openapi3.T, id string) *openapi3.Operation {
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.OperationID == id {
				return op
			}
		}
	}
	return nil
}
