package contacts

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/google/uuid"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/normalize"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/traceid"
	"github.com/almoner/almoner/services/contacts/store"
)

type contactServer struct {
	contactsv1.UnimplementedContactServiceServer
	s *Service
}

// authorize checks the principal and returns it with its tenant id.
func authorize(ctx context.Context, tenantID, scope string) (authctx.Principal, uuid.UUID, error) {
	p, err := authctx.Require(ctx, tenantID, scope)
	if err != nil {
		return authctx.Principal{}, uuid.Nil, err
	}
	tenant, err := uuid.Parse(p.TenantID)
	if err != nil {
		return authctx.Principal{}, uuid.Nil, errTenantNotFound
	}
	return p, tenant, nil
}

// storeError maps the store's sentinels to domain errors. A tombstone is a
// 404 like any contact that is not there, with the member mergedInto
// naming its survivor (docs/merge.md).
func storeError(err error) error {
	var re *store.RefError
	var merged *store.MergedError
	switch {
	case errors.As(err, &merged):
		return errContactNotFound.With("mergedInto", merged.Into)
	case errors.Is(err, db.ErrNotFound):
		return errContactNotFound
	case errors.As(err, &re):
		return refViolation(re)
	}
	return err
}

// GetContact returns one contact and its ETag.
func (c *contactServer) GetContact(ctx context.Context, req *contactsv1.GetContactRequest) (*contactsv1.GetContactResponse, error) {
	_, tenant, err := authorize(ctx, req.GetTenantId(), scopes.ContactsView)
	if err != nil {
		return nil, err
	}
	if err := validContactID(req.GetContactId()); err != nil {
		return nil, err
	}
	ct, err := c.s.store.Get(ctx, tenant, req.GetContactId())
	if err != nil {
		return nil, storeError(err)
	}
	setETag(ctx, ct.Version)
	return &contactsv1.GetContactResponse{Contact: toContact(ct)}, nil
}

// CreateContact validates and stores a new contact.
func (c *contactServer) CreateContact(ctx context.Context, req *contactsv1.CreateContactRequest) (*contactsv1.CreateContactResponse, error) {
	p, tenant, err := authorize(ctx, req.GetTenantId(), scopes.ContactsCreate)
	if err != nil {
		return nil, err
	}
	f, err := validateContact(req.GetContact(), modeStore, 0)
	if err != nil {
		return nil, err
	}
	if err := c.s.checkAssignee(ctx, p, f); err != nil {
		return nil, err
	}
	ct, err := c.s.store.Create(ctx, tenant, f, p.Actor())
	if err != nil {
		return nil, storeError(err)
	}
	setETag(ctx, ct.Version)
	return &contactsv1.CreateContactResponse{Contact: toContact(ct)}, nil
}

// UpdateContact replaces a contact, optionally only at the version named by
// If-Match.
func (c *contactServer) UpdateContact(ctx context.Context, req *contactsv1.UpdateContactRequest) (*contactsv1.UpdateContactResponse, error) {
	p, tenant, err := authorize(ctx, req.GetTenantId(), scopes.ContactsEdit)
	if err != nil {
		return nil, err
	}
	if err := validContactID(req.GetContactId()); err != nil {
		return nil, err
	}
	cond, err := parseIfMatch(ctx)
	if err != nil {
		return nil, err
	}
	f, err := validateContact(req.GetContact(), modeStore, req.GetContactId())
	if err != nil {
		return nil, err
	}
	if err := c.s.checkAssignee(ctx, p, f); err != nil {
		return nil, err
	}
	ct, err := c.s.store.Update(ctx, tenant, req.GetContactId(), f, p.Actor(), func(version int64) error {
		if !cond.matches(version) {
			return errVersionMismatch(version)
		}
		return nil
	})
	if err != nil {
		return nil, storeError(err)
	}
	setETag(ctx, ct.Version)
	return &contactsv1.UpdateContactResponse{Contact: toContact(ct)}, nil
}

// listToken is the cursor of a contact list: the last id served, the page
// number it leads to, a fingerprint of the filters and page size it was
// made for, and the total counted when the listing started.
//
// Carrying the total is what keeps deep pages cheap: counting is the one
// part of a page whose cost grows with the tenant (about 50 ms at a million
// contacts), and a client paging through all of them would otherwise pay
// it on every page.
type listToken struct {
	After int64  `json:"a"`
	Page  int32  `json:"p"`
	Query string `json:"q"`
	Total int64  `json:"n"`
}

func fingerprint(parts ...string) string {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

var errTokenMismatch = apperr.Invalid(apperr.Violation{Field: "PageToken",
	Message: "'PageToken' was made for other filters or another page size; send the same ones, or start again without it."})

// ListContacts returns a page of the tenant's contacts.
func (c *contactServer) ListContacts(ctx context.Context, req *contactsv1.ListContactsRequest) (*contactsv1.ListContactsResponse, error) {
	_, tenant, err := authorize(ctx, req.GetTenantId(), scopes.ContactsView)
	if err != nil {
		return nil, err
	}
	pg, f, err := listRequest(req)
	if err != nil {
		return nil, err
	}
	query := listQueryKey(f, pg.Size)
	page, number, tok, err := listPage(pg, query)
	if err != nil {
		return nil, err
	}
	if f.CohortID != "" {
		if page, tok.Total, err = c.cohortPage(ctx, &f, page, tok.Total); err != nil {
			return nil, err
		}
	}
	list, more, total, err := c.s.store.List(ctx, tenant, f, page)
	if err != nil {
		return nil, err
	}
	if page.SkipCount {
		total = tok.Total
	}
	out := &contactsv1.ListContactsResponse{
		Items: make([]*contactsv1.Contact, len(list)), TotalCount: total, Page: number, PageSize: pg.Size,
	}
	for i, ct := range list {
		out.Items[i] = toContact(ct)
	}
	if more && len(list) > 0 {
		out.NextPageToken = paging.EncodeToken(listToken{After: list[len(list)-1].ID, Page: number + 1, Query: query, Total: total})
	}
	return out, nil
}

// listRequest reads a list request's paging and filters; every problem
// with either is one violation list.
func listRequest(req *contactsv1.ListContactsRequest) (paging.Page, store.ListFilter, error) {
	pg, err := paging.Parse(req.Page, req.PageSize, req.GetPageToken(), paging.Standard)
	var v apperr.Violations
	if err != nil {
		if e, ok := apperr.As(err); ok {
			for _, x := range e.Violations {
				v.Add(x.Field, "%s", x.Message)
			}
		}
	}
	f := store.ListFilter{
		Search:     text(&v, "Search", "Search", req.GetSearch(), maxSearchLength, false),
		Tag:        text(&v, "Tag", "Tag", req.GetTag(), maxTagLength, false),
		ExternalID: text(&v, "ExternalId", "External Id", req.GetExternalId(), maxExternalIDLength, false),
		IsActive:   req.IsActive,
	}
	if t := strings.TrimSpace(req.GetContactType()); t != "" {
		ct := normalize.OneOf(contactTypes, t)
		if ct == "" {
			v.Add("ContactType", "'Contact Type' must be Individual or Organization.")
		}
		f.Type = ct
	}
	if req.GetUpdatedSince() != nil {
		t := req.GetUpdatedSince().AsTime()
		f.UpdatedSince = &t
	}
	if f.CohortID = strings.TrimSpace(req.GetCohortId()); f.CohortID != "" &&
		(f.Search != "" || f.Tag != "" || f.ExternalID != "" || f.Type != "" || f.UpdatedSince != nil || f.IsActive != nil) {
		v.Add("CohortId", "'CohortId' is not combined with other filters: put them in the cohort's definition.")
	}
	return pg, f, v.Err()
}

// listPage is where a page starts: after the last contact of the page
// before when a token says so (its total carried on, the count skipped),
// else at the page's offset. A token of another query is refused.
func listPage(pg paging.Page, query string) (store.ListPage, int32, listToken, error) {
	page := store.ListPage{Limit: int(pg.Size)}
	var tok listToken
	if pg.Token == nil {
		page.Offset = pg.Offset()
		return page, pg.Number, tok, nil
	}
	if err := paging.DecodeToken(pg.Token, &tok); err != nil {
		return page, 0, tok, err
	}
	if tok.Query != query || tok.After <= 0 || tok.Page < 2 || tok.Total < 0 {
		return page, 0, tok, errTokenMismatch
	}
	page.AfterID, page.SkipCount = tok.After, true
	return page, tok.Page, tok, nil
}

// listQueryKey fingerprints what a list token is valid for: the filters
// and the page size (a page number means nothing with another size).
func listQueryKey(f store.ListFilter, size int32) string {
	since := ""
	if f.UpdatedSince != nil {
		since = f.UpdatedSince.UTC().Format(time.RFC3339Nano)
	}
	return fingerprint(f.Search, f.Tag, f.Type, f.ExternalID, since, boolOr(f.IsActive), fmt.Sprint(size), f.CohortID)
}

func boolOr(b *bool) string {
	if b == nil {
		return "any"
	}
	return fmt.Sprint(*b)
}

// Duplicate scoring: each kind of evidence has a weight, and the score is
// the chance that at least one piece is right if each were independent:
// 1 − Π(1 − wᵢ). One shared email scores 0.9, a shared phone 0.7, a name
// with similarity s at the same postal code 0.8·s; together they approach
// but never reach 1.
const (
	weightEmail         = 0.9
	weightPhone         = 0.7
	weightName          = 0.8
	minNameSimilarity   = 0.5
	maxDuplicateMatches = 10
)

// CheckDuplicateContacts ranks the contacts that look like the candidate.
func (c *contactServer) CheckDuplicateContacts(ctx context.Context, req *contactsv1.CheckDuplicateContactsRequest) (*contactsv1.CheckDuplicateContactsResponse, error) {
	_, tenant, err := authorize(ctx, req.GetTenantId(), scopes.ContactsView)
	if err != nil {
		return nil, err
	}
	if req.GetExcludeContactId() < 0 {
		return nil, apperr.Invalid(apperr.Violation{Field: "ExcludeContactId", Message: "Exclude contact id must be greater than 0."})
	}
	cand, err := duplicateCandidate(req)
	if err != nil {
		return nil, err
	}
	hits, err := c.s.store.FindDuplicates(ctx, tenant, cand, minNameSimilarity)
	if err != nil {
		return nil, err
	}
	ranked := rankDuplicates(hits)
	if len(ranked) > maxDuplicateMatches {
		ranked = ranked[:maxDuplicateMatches]
	}
	return c.duplicateMatches(ctx, tenant, ranked)
}

// duplicateCandidate is what a duplicate check compares: the candidate's
// name, email, phone and postal keys. A candidate with nothing to compare
// (no email, no phone, no name with a postal code) is refused.
func duplicateCandidate(req *contactsv1.CheckDuplicateContactsRequest) (store.Candidate, error) {
	f, err := validateContact(req.GetCandidate(), modeCandidate, 0)
	if err != nil {
		return store.Candidate{}, err
	}
	cand := store.Candidate{NameKey: store.NameKey(f), ExcludeID: req.GetExcludeContactId()}
	if f.Type == "" && f.FirstName == "" && f.LastName == "" {
		cand.NameKey = store.NameKey(store.Fields{Type: store.Organization, OrganizationName: f.OrganizationName})
	}
	for _, e := range f.Emails {
		cand.EmailKeys = append(cand.EmailKeys, e.Key)
	}
	for _, p := range f.Phones {
		cand.PhoneKeys = append(cand.PhoneKeys, p.Key)
	}
	for _, a := range f.Addresses {
		if a.PostalKey != "" {
			cand.PostalKeys = append(cand.PostalKeys, a.PostalKey)
		}
	}
	if len(cand.EmailKeys) == 0 && len(cand.PhoneKeys) == 0 && (cand.NameKey == "" || len(cand.PostalKeys) == 0) {
		return store.Candidate{}, apperr.Rule("Contact.NothingToCompare", "Give an email, a phone, or a name with a postal code to compare.")
	}
	return cand, nil
}

// duplicateMatches reads the ranked contacts and answers them in rank
// order; one gone since the search is left out.
func (c *contactServer) duplicateMatches(ctx context.Context, tenant uuid.UUID, ranked []ranked) (*contactsv1.CheckDuplicateContactsResponse, error) {
	ids := make([]int64, len(ranked))
	for i, r := range ranked {
		ids[i] = r.id
	}
	found, err := c.s.store.GetMany(ctx, tenant, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]store.Contact, len(found))
	for _, ct := range found {
		byID[ct.ID] = ct
	}
	out := &contactsv1.CheckDuplicateContactsResponse{Matches: []*contactsv1.DuplicateMatch{}}
	for _, r := range ranked {
		if ct, ok := byID[r.id]; ok {
			out.Matches = append(out.Matches, &contactsv1.DuplicateMatch{Contact: toContact(ct), Score: r.score, MatchedFields: r.fields})
		}
	}
	return out, nil
}

// GetContactDashboard returns the contact with its giving from the orders
// service. When the orders service fails the dashboard fails too: showing
// zeros would be inventing figures.
func (c *contactServer) GetContactDashboard(ctx context.Context, req *contactsv1.GetContactDashboardRequest) (*contactsv1.GetContactDashboardResponse, error) {
	p, tenant, err := authorize(ctx, req.GetTenantId(), scopes.ContactsView)
	if err != nil {
		return nil, err
	}
	if err := validContactID(req.GetContactId()); err != nil {
		return nil, err
	}
	ct, err := c.s.store.Get(ctx, tenant, req.GetContactId())
	if err != nil {
		return nil, storeError(err)
	}
	giving, err := c.s.givingClient()
	if err != nil {
		return nil, err
	}
	// The orders service authorizes the same principal (this process signs
	// it for the call), and the trace id follows the call so one id finds
	// both services' log lines.
	callCtx := authctx.NewOutgoingContext(traceid.Forward(ctx), p)
	callCtx, cancel := context.WithTimeout(callCtx, c.s.cfg.GivingTimeout)
	defer cancel()
	summary, err := giving.GetContactGivingSummary(callCtx, &ordersv1.GetContactGivingSummaryRequest{
		TenantId: p.TenantID, ContactId: ct.ID, RecentOrderLimit: 5,
	})
	if err != nil {
		return nil, err
	}
	return &contactsv1.GetContactDashboardResponse{Dashboard: toDashboard(ct, summary)}, nil
}

// auditToken is the cursor of a contact's audit feed: the last row served
// and the page number it leads to.
type auditToken struct {
	Before int64 `json:"b"`
	Page   int32 `json:"p"`
	Size   int32 `json:"s"`
}

// ListContactAuditLogs returns the contact's audit rows, newest first.
func (c *contactServer) ListContactAuditLogs(ctx context.Context, req *contactsv1.ListContactAuditLogsRequest) (*contactsv1.ListContactAuditLogsResponse, error) {
	p, tenant, err := authorize(ctx, req.GetTenantId(), scopes.AuditLogsView)
	if err != nil {
		return nil, err
	}
	if err := validContactID(req.GetContactId()); err != nil {
		return nil, err
	}
	pg, err := paging.Parse(req.Page, req.PageSize, req.GetPageToken(), paging.Standard)
	if err != nil {
		return nil, err
	}
	if ok, err := c.s.store.Exists(ctx, tenant, req.GetContactId()); err != nil {
		return nil, err
	} else if !ok {
		return nil, errContactNotFound
	}
	q := audit.EntityQuery{TenantID: p.TenantID, EntityType: store.EntityType, EntityID: store.EntityID(req.GetContactId()), Limit: int(pg.Size) + 1}
	number := pg.Number
	if pg.Token != nil {
		var tok auditToken
		if err := paging.DecodeToken(pg.Token, &tok); err != nil {
			return nil, err
		}
		if tok.Before <= 0 || tok.Page < 2 || tok.Size != pg.Size {
			return nil, errTokenMismatch
		}
		q.BeforeSeq, number = tok.Before, tok.Page
	} else {
		q.Offset = pg.Offset()
	}
	pool := c.s.store.Pool()
	events, err := audit.ListEntity(ctx, pool, q)
	if err != nil {
		return nil, err
	}
	total, err := audit.CountEntity(ctx, pool, p.TenantID, store.EntityType, store.EntityID(req.GetContactId()))
	if err != nil {
		return nil, err
	}
	more := len(events) > int(pg.Size)
	if more {
		events = events[:pg.Size]
	}
	out := &contactsv1.ListContactAuditLogsResponse{
		Items: make([]*contactsv1.AuditLogEntry, len(events)), TotalCount: total, Page: number, PageSize: pg.Size,
	}
	for i, e := range events {
		if out.Items[i], err = toAuditEntry(e); err != nil {
			return nil, fmt.Errorf("audit row %d: %w", e.Seq, err)
		}
	}
	if more && len(events) > 0 {
		out.NextPageToken = paging.EncodeToken(auditToken{Before: events[len(events)-1].Seq, Page: number + 1, Size: pg.Size})
	}
	return out, nil
}
