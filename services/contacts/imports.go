package contacts

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/contacts/store"
)

// importServer serves the internal ContactImportService for the imports
// service's runner: batches of contact rows, and resolving the contacts a
// gift import names. The gateway maps none of it.
type importServer struct {
	contactsv1.UnimplementedContactImportServiceServer
	s *Service
}

// maxImportBatch is the most rows (or ids) one call may carry.
const maxImportBatch = 10_000

// ImportContacts validates each row with the API's own rules (a refused
// row is answered failed with its column), then writes the batch in one
// transaction (store.ImportContacts) and answers every row in request
// order.
func (i *importServer) ImportContacts(ctx context.Context, req *contactsv1.ImportContactsRequest) (*contactsv1.ImportContactsResponse, error) {
	_, tenant, err := authorize(ctx, req.GetTenantId(), scopes.ImportsManage)
	if err != nil {
		return nil, err
	}
	batch, err := validateImportBatch(req)
	if err != nil {
		return nil, err
	}
	batch.Tenant = tenant
	results, err := i.s.store.ImportContacts(ctx, batch)
	if err != nil {
		return nil, err
	}
	out := &contactsv1.ImportContactsResponse{Results: make([]*contactsv1.ImportRowResult, len(req.GetRows()))}
	for n, row := range req.GetRows() {
		r, ok := results[row.GetRow()]
		if !ok {
			return nil, fmt.Errorf("import %s: row %d has no result", batch.ImportID, row.GetRow())
		}
		res := &contactsv1.ImportRowResult{Row: r.Row, Outcome: r.Outcome, Column: r.Column, Message: r.Message}
		if r.ContactID > 0 {
			res.EntityId = store.EntityID(r.ContactID)
		}
		out.Results[n] = res
	}
	return out, nil
}

// validateImportBatch checks the request and splits its rows into those to
// write and those refused.
func validateImportBatch(req *contactsv1.ImportContactsRequest) (store.ImportBatch, error) {
	var v apperr.Violations
	b := store.ImportBatch{DryRun: req.GetDryRun()}
	id, err := uuid.Parse(req.GetImportId())
	if err != nil {
		v.Add("ImportId", "'Import Id' must be a UUID.")
	}
	b.ImportID = id
	switch p := strings.ToLower(strings.TrimSpace(req.GetDuplicates())); p {
	case store.PolicySkip, store.PolicyUpdate, store.PolicyCreate:
		b.Policy = p
	default:
		v.Add("Duplicates", "'Duplicates' must be skip, update or create.")
	}
	if n := len(req.GetRows()); n > maxImportBatch {
		v.Add("Rows", "A batch has at most %d rows; this one has %d.", maxImportBatch, n)
	}
	seen := make(map[int64]bool, len(req.GetRows()))
	for n, row := range req.GetRows() {
		switch {
		case row.GetRow() <= 0:
			v.Add(fmt.Sprintf("Rows[%d].Row", n), "'Row' must be greater than 0.")
		case seen[row.GetRow()]:
			v.Add(fmt.Sprintf("Rows[%d].Row", n), "Row %d is in the batch twice.", row.GetRow())
		}
		seen[row.GetRow()] = true
	}
	if err := v.Err(); err != nil {
		return store.ImportBatch{}, err
	}
	for _, row := range req.GetRows() {
		f, err := validateContact(importInput(row), modeStore, 0)
		if err != nil {
			b.Failed = append(b.Failed, refusedRow(row.GetRow(), err))
			continue
		}
		b.Rows = append(b.Rows, store.ImportRow{Row: row.GetRow(), Fields: f})
	}
	return b, nil
}

// importInput is a row as the API's contact body: the same validation and
// normalization then apply to both.
func importInput(r *contactsv1.ContactImportRow) *contactsv1.ContactInput {
	opt := func(s string) *string {
		if strings.TrimSpace(s) == "" {
			return nil
		}
		return &s
	}
	in := &contactsv1.ContactInput{
		ContactType: r.GetContactType(), FirstName: opt(r.GetFirstName()), LastName: opt(r.GetLastName()),
		OrganizationName: opt(r.GetOrganizationName()), ExternalId: opt(r.GetExternalId()), Tags: r.GetTags(),
	}
	if in.ContactType == "" {
		in.ContactType = store.Individual
	}
	if strings.TrimSpace(r.GetEmail()) != "" {
		in.Emails = []*contactsv1.Email{{EmailAddress: r.GetEmail()}}
	}
	if strings.TrimSpace(r.GetPhone()) != "" {
		in.Phones = []*contactsv1.Phone{{PhoneNumber: r.GetPhone()}}
	}
	if strings.TrimSpace(r.GetLine1()+r.GetLine2()+r.GetCity()+r.GetStateProvince()+r.GetPostalCode()+r.GetCountry()) != "" {
		in.Addresses = []*contactsv1.Address{{Line1: r.GetLine1(), Line2: opt(r.GetLine2()), City: opt(r.GetCity()),
			StateProvince: opt(r.GetStateProvince()), PostalCode: opt(r.GetPostalCode()), Country: opt(r.GetCountry())}}
	}
	return in
}

// importColumns maps the API's property paths to the file's columns.
var importColumns = []struct{ prefix, column string }{
	{"ContactType", "contactType"}, {"FirstName", "firstName"}, {"LastName", "lastName"},
	{"OrganizationName", "organizationName"}, {"ExternalId", "externalId"}, {"Emails", "email"}, {"Phones", "phone"},
	{"Addresses[0].Line1", "line1"}, {"Addresses[0].Line2", "line2"}, {"Addresses[0].City", "city"},
	{"Addresses[0].StateProvince", "stateProvince"}, {"Addresses[0].PostalCode", "postalCode"},
	{"Addresses[0].Country", "country"}, {"Tags", "tags"},
}

// refusedRow is the failed result of a row validateContact refused: the
// first violation, under the file's column name.
func refusedRow(row int64, err error) store.ImportResult {
	res := store.ImportResult{Row: row, Outcome: store.OutcomeFailed, Message: "The row is not valid."}
	e, ok := apperr.As(err)
	if !ok || len(e.Violations) == 0 {
		return res
	}
	first := e.Violations[0]
	res.Message = first.Message
	for _, c := range importColumns {
		if strings.HasPrefix(first.Field, c.prefix) {
			res.Column = c.column
			break
		}
	}
	return res
}

// ResolveContacts maps contact ids and external ids to live contacts.
func (i *importServer) ResolveContacts(ctx context.Context, req *contactsv1.ResolveContactsRequest) (*contactsv1.ResolveContactsResponse, error) {
	_, tenant, err := authorize(ctx, req.GetTenantId(), scopes.ImportsManage)
	if err != nil {
		return nil, err
	}
	var v apperr.Violations
	if len(req.GetContactIds()) > maxImportBatch {
		v.Add("ContactIds", "At most %d contact ids may be resolved at once.", maxImportBatch)
	}
	if len(req.GetExternalIds()) > maxImportBatch {
		v.Add("ExternalIds", "At most %d external ids may be resolved at once.", maxImportBatch)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	r, err := i.s.store.Resolve(ctx, tenant, req.GetContactIds(), req.GetExternalIds())
	if err != nil {
		return nil, err
	}
	return &contactsv1.ResolveContactsResponse{ByContactId: r.ByID, ByExternalId: r.ByExternalID}, nil
}
