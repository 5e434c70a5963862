package cohorts

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/pkg/scopes"
)

// Server is the CohortService.
type Server struct {
	reportsv1.UnimplementedCohortServiceServer
	store     *Store
	calendars Calendars
}

// NewServer returns the CohortService.
func NewServer(st *Store, cal Calendars) *Server {
	return &Server{store: st, calendars: cal}
}

// resolved is a cohort found for a request: a built-in or a saved one,
// with its parsed definition.
type resolved struct {
	id      string
	builtIn bool
	saved   Cohort
	node    *Node
	def     json.RawMessage
}

// load finds the tenant's cohort id (404 for another tenant's or none).
func (x *Server) load(ctx context.Context, tenant uuid.UUID, cal Calendar, id string) (resolved, error) {
	if IsBuiltin(id) {
		def := builtinDefinition(id, cal)
		n, err := Parse([]byte(def))
		return resolved{id: id, builtIn: true, node: n, def: json.RawMessage(def)}, err
	}
	cid, err := uuid.Parse(id)
	if err != nil {
		return resolved{}, apperr.NotFound("Cohort")
	}
	c, err := x.store.Get(ctx, tenant, cid)
	if errors.Is(err, db.ErrNotFound) {
		return resolved{}, apperr.NotFound("Cohort")
	}
	if err != nil {
		return resolved{}, err
	}
	n, err := Parse(c.Definition)
	if err != nil {
		return resolved{}, err
	}
	return resolved{id: id, saved: c, node: n, def: c.Definition}, nil
}

// compiler makes the tenant's compiler: its currency, calendar and a
// resolver of references to its cohorts.
func (x *Server) compiler(ctx context.Context, p authctx.Principal) (*Compiler, error) {
	cur, err := p.DefaultCurrency()
	if err != nil {
		cur = "USD"
	}
	return x.compilerFor(ctx, p.Tenant(), cur)
}

// compilerFor is compiler for a tenant and currency (a background run's).
func (x *Server) compilerFor(ctx context.Context, tenant uuid.UUID, cur string) (*Compiler, error) {
	cal, err := x.calendars.CohortCalendar(ctx, tenant)
	if err != nil {
		return nil, err
	}
	// Only a compiled query reads a recent window: listing and reading
	// definitions need no rolling start.
	if cal.RollingFrom, err = x.store.RollingFrom(ctx, tenant); err != nil {
		return nil, err
	}
	c := &Compiler{Tenant: tenant, Currency: cur, Calendar: cal}
	c.Resolve = func(ctx context.Context, id string) (*Node, error) {
		r, err := x.load(ctx, tenant, cal, id)
		if err != nil {
			return nil, err
		}
		return r.node, nil
	}
	return c, nil
}

// Query compiles the tenant's cohort id for a read: the 404 of load, or
// the query. Report parameters and letter runs filter with it.
func (x *Server) Query(ctx context.Context, p authctx.Principal, id string) (Query, error) {
	c, err := x.compiler(ctx, p)
	if err != nil {
		return Query{}, err
	}
	r, err := x.load(ctx, p.Tenant(), c.Calendar, id)
	if err != nil {
		return Query{}, err
	}
	return c.Compile(ctx, r.id, r.node)
}

// Members lists the members of the tenant's cohort id now, in id order
// (letters.CohortMembers: a letter run's filter, without a principal).
func (x *Server) Members(ctx context.Context, tenant uuid.UUID, currency, id string) ([]int64, error) {
	c, err := x.compilerFor(ctx, tenant, currency)
	if err != nil {
		return nil, err
	}
	r, err := x.load(ctx, tenant, c.Calendar, id)
	if err != nil {
		return nil, err
	}
	q, err := c.Compile(ctx, r.id, r.node)
	if err != nil {
		return nil, err
	}
	return x.store.AllIDs(ctx, q)
}

// CreateCohort saves a cohort.
func (x *Server) CreateCohort(ctx context.Context, req *reportsv1.CreateCohortRequest) (*reportsv1.CreateCohortResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.CohortsManage)
	if err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	c, err := x.validate(ctx, p, id, req.GetCohort())
	if err != nil {
		return nil, err
	}
	saved, err := x.store.Create(ctx, c, p.Actor())
	if err != nil {
		return nil, err
	}
	return &reportsv1.CreateCohortResponse{Cohort: toProto(resolved{id: saved.ID.String(), saved: saved, def: saved.Definition})}, nil
}

// validate checks a cohort's body: its name, and its definition against
// the grammar, its references (each the tenant's, no cycle back to id).
func (x *Server) validate(ctx context.Context, p authctx.Principal, id uuid.UUID, in *reportsv1.CohortInput) (Cohort, error) {
	c := Cohort{TenantID: p.Tenant(), ID: id, Name: strings.TrimSpace(in.GetName()), Description: in.GetDescription()}
	var v apperr.Violations
	if c.Name == "" || utf8.RuneCountInString(c.Name) > 200 || strings.ContainsRune(c.Name, 0) {
		v.Add("Name", "'Name' must be 1 to 200 characters.")
	}
	if utf8.RuneCountInString(c.Description) > 2000 || strings.ContainsRune(c.Description, 0) {
		v.Add("Description", "'Description' must be at most 2000 characters.")
	}
	if err := v.Err(); err != nil {
		return c, err
	}
	if in.GetDefinition() == nil {
		return c, problem("Malformed", "definition", "A cohort needs a 'definition'.")
	}
	raw, err := protojson.Marshal(in.GetDefinition())
	if err != nil {
		return c, problem("Malformed", "definition", "The definition must be a JSON object.")
	}
	n, err := Parse(raw)
	if err != nil {
		return c, err
	}
	comp, err := x.compiler(ctx, p)
	if err != nil {
		return c, err
	}
	if _, err := comp.Compile(ctx, id.String(), n); err != nil {
		return c, err
	}
	c.Definition = raw
	c.Refs = []string{}
	for ref := range n.References() {
		c.Refs = append(c.Refs, ref)
	}
	return c, nil
}

// ListCohorts lists the built-ins, then the saved cohorts.
func (x *Server) ListCohorts(ctx context.Context, req *reportsv1.ListCohortsRequest) (*reportsv1.ListCohortsResponse, error) {
	p, err := authctx.RequireAny(ctx, req.GetTenantId(), scopes.CohortsManage, scopes.ContactsView)
	if err != nil {
		return nil, err
	}
	cal, err := x.calendars.CohortCalendar(ctx, p.Tenant())
	if err != nil {
		return nil, err
	}
	out := &reportsv1.ListCohortsResponse{Items: []*reportsv1.Cohort{}}
	for _, id := range BuiltinIDs() {
		out.Items = append(out.Items, toProto(resolved{id: id, builtIn: true, def: json.RawMessage(builtinDefinition(id, cal))}))
	}
	saved, err := x.store.List(ctx, p.Tenant())
	if err != nil {
		return nil, err
	}
	for _, c := range saved {
		out.Items = append(out.Items, toProto(resolved{id: c.ID.String(), saved: c, def: c.Definition}))
	}
	return out, nil
}

// GetCohort reads one cohort.
func (x *Server) GetCohort(ctx context.Context, req *reportsv1.GetCohortRequest) (*reportsv1.GetCohortResponse, error) {
	p, err := authctx.RequireAny(ctx, req.GetTenantId(), scopes.CohortsManage, scopes.ContactsView)
	if err != nil {
		return nil, err
	}
	cal, err := x.calendars.CohortCalendar(ctx, p.Tenant())
	if err != nil {
		return nil, err
	}
	r, err := x.load(ctx, p.Tenant(), cal, req.GetCohortId())
	if err != nil {
		return nil, err
	}
	return &reportsv1.GetCohortResponse{Cohort: toProto(r)}, nil
}

// UpdateCohort replaces a saved cohort.
func (x *Server) UpdateCohort(ctx context.Context, req *reportsv1.UpdateCohortRequest) (*reportsv1.UpdateCohortResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.CohortsManage)
	if err != nil {
		return nil, err
	}
	if IsBuiltin(req.GetCohortId()) {
		return nil, apperr.Rule("Cohort.BuiltIn", "A built-in cohort is read-only: save a cohort of your own that refers to it.")
	}
	id, err := uuid.Parse(req.GetCohortId())
	if err != nil {
		return nil, apperr.NotFound("Cohort")
	}
	if _, err := x.store.Get(ctx, p.Tenant(), id); errors.Is(err, db.ErrNotFound) {
		return nil, apperr.NotFound("Cohort")
	} else if err != nil {
		return nil, err
	}
	c, err := x.validate(ctx, p, id, req.GetCohort())
	if err != nil {
		return nil, err
	}
	saved, err := x.store.Update(ctx, c, p.Actor())
	if errors.Is(err, db.ErrNotFound) {
		return nil, apperr.NotFound("Cohort")
	}
	if err != nil {
		return nil, err
	}
	return &reportsv1.UpdateCohortResponse{Cohort: toProto(resolved{id: saved.ID.String(), saved: saved, def: saved.Definition})}, nil
}

// DeleteCohort deletes a saved cohort.
func (x *Server) DeleteCohort(ctx context.Context, req *reportsv1.DeleteCohortRequest) (*reportsv1.DeleteCohortResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.CohortsManage)
	if err != nil {
		return nil, err
	}
	if IsBuiltin(req.GetCohortId()) {
		return nil, apperr.Rule("Cohort.BuiltIn", "A built-in cohort cannot be deleted.")
	}
	id, err := uuid.Parse(req.GetCohortId())
	if err != nil {
		return nil, apperr.NotFound("Cohort")
	}
	err = x.store.Delete(ctx, p.Tenant(), id, p.Actor())
	if errors.Is(err, db.ErrNotFound) {
		return nil, apperr.NotFound("Cohort")
	}
	if err != nil {
		return nil, err
	}
	return &reportsv1.DeleteCohortResponse{}, nil
}

// CountCohort counts a cohort's members now.
func (x *Server) CountCohort(ctx context.Context, req *reportsv1.CountCohortRequest) (*reportsv1.CountCohortResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ContactsView)
	if err != nil {
		return nil, err
	}
	q, err := x.Query(ctx, p, req.GetCohortId())
	if err != nil {
		return nil, err
	}
	n, err := x.store.Count(ctx, q)
	if err != nil {
		return nil, err
	}
	return &reportsv1.CountCohortResponse{Count: n}, nil
}

// ListCohortMembers reads a page of members.
func (x *Server) ListCohortMembers(ctx context.Context, req *reportsv1.ListCohortMembersRequest) (*reportsv1.ListCohortMembersResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ContactsView)
	if err != nil {
		return nil, err
	}
	pg, err := paging.Parse(req.Page, req.PageSize, "", paging.Standard)
	if err != nil {
		return nil, err
	}
	order, err := sortOf(req.GetSort())
	if err != nil {
		return nil, err
	}
	q, err := x.Query(ctx, p, req.GetCohortId())
	if err != nil {
		return nil, err
	}
	members, total, err := x.store.Members(ctx, q, order, pg.Size, pg.Offset())
	if err != nil {
		return nil, err
	}
	cur, _ := p.DefaultCurrency()
	out := &reportsv1.ListCohortMembersResponse{Items: make([]*reportsv1.CohortMember, 0, len(members)), TotalCount: total, Page: pg.Number, PageSize: pg.Size}
	for _, m := range members {
		out.Items = append(out.Items, memberToProto(m, cur))
	}
	return out, nil
}

// sortOf reads a sort key, '-' first for descending.
func sortOf(s string) (string, error) {
	if s == "" {
		return Sorts["contactId"], nil
	}
	key, dir := s, ""
	if strings.HasPrefix(s, "-") {
		key, dir = s[1:], " DESC"
	}
	expr, ok := Sorts[key]
	if !ok {
		return "", apperr.Invalid(apperr.Violation{Field: "Sort", Message: "'Sort' must be one of contactId, displayName, email, totalGiven, giftCount, firstGiftDate, lastGiftDate, largestGift, with '-' first for descending."})
	}
	return expr + dir, nil
}

// ListCohortMemberIds reads a page of member ids for the contacts list.
func (x *Server) ListCohortMemberIds(ctx context.Context, req *reportsv1.ListCohortMemberIdsRequest) (*reportsv1.ListCohortMemberIdsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ContactsView)
	if err != nil {
		return nil, err
	}
	if req.GetLimit() < 1 || req.GetLimit() > 1000 || req.GetOffset() < 0 {
		return nil, apperr.Invalid(apperr.Violation{Field: "Limit", Message: "'Limit' must be 1 to 1000."})
	}
	q, err := x.Query(ctx, p, req.GetCohortId())
	if err != nil {
		return nil, err
	}
	ids, total, err := x.store.MemberIDs(ctx, q, req.GetAfterId(), req.GetOffset(), req.GetLimit(), req.GetWithCount())
	if err != nil {
		return nil, err
	}
	return &reportsv1.ListCohortMemberIdsResponse{ContactIds: ids, TotalCount: total}, nil
}

func toProto(r resolved) *reportsv1.Cohort {
	def := &structpb.Struct{}
	_ = protojson.Unmarshal(r.def, def)
	out := &reportsv1.Cohort{Id: r.id, Definition: def, BuiltIn: r.builtIn}
	if r.builtIn {
		b := builtins[r.id]
		out.Name, out.Description = b.name, b.description
		return out
	}
	out.Name, out.Description = r.saved.Name, r.saved.Description
	out.CreatedAt, out.UpdatedAt = timestamppb.New(r.saved.CreatedAt), timestamppb.New(r.saved.UpdatedAt)
	return out
}

func memberToProto(m Member, cur string) *reportsv1.CohortMember {
	out := &reportsv1.CohortMember{ContactId: m.ContactID, DisplayName: m.DisplayName, Email: m.Email, GiftCount: m.GiftCount,
		TotalGiven: &typev1.Decimal{Value: money.FormatMinor(m.TotalMinor, cur)}, LargestGift: &typev1.Decimal{Value: money.FormatMinor(m.LargestMinor, cur)}}
	if m.FirstGiftDate != nil {
		s := m.FirstGiftDate.Format(time.DateOnly)
		out.FirstGiftDate = &s
	}
	if m.LastGiftDate != nil {
		s := m.LastGiftDate.Format(time.DateOnly)
		out.LastGiftDate = &s
	}
	return out
}
