package letters

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/reports/render"
	"github.com/almoner/almoner/services/reports/templates"
)

// Server is the LetterRunService.
type Server struct {
	reportsv1.UnimplementedLetterRunServiceServer
	store     *Store
	templates *templates.Store
	frames    Frames
	// Queued is called after a run is queued (wakes this replica's
	// runner); nil: nothing.
	Queued func()
}

// NewServer returns the LetterRunService.
func NewServer(st *Store, ts *templates.Store, frames Frames) *Server {
	return &Server{store: st, templates: ts, frames: frames}
}

// StartLetterRun validates and queues a run.
func (x *Server) StartLetterRun(ctx context.Context, req *reportsv1.StartLetterRunRequest) (*reportsv1.StartLetterRunResponse, error) {
	tenant, p, err := authorize(ctx, req.GetTenantId())
	if err != nil {
		return nil, err
	}
	base, err := x.frames.LetterBase(ctx, tenant)
	if err != nil {
		return nil, err
	}
	cur, err := p.DefaultCurrency()
	if err != nil {
		cur = "USD"
	}
	run, err := x.runFromRequest(ctx, tenant, req, base.Location, cur)
	if err != nil {
		return nil, err
	}
	run.Actor = p.Actor()
	saved, err := x.store.Create(ctx, run)
	if err != nil {
		return nil, err
	}
	if x.Queued != nil {
		x.Queued()
	}
	return &reportsv1.StartLetterRunResponse{Run: ToProto(saved)}, nil
}

// runFromRequest checks a run's body: an acknowledgement template of the
// tenant, a channel, and the filter.
func (x *Server) runFromRequest(ctx context.Context, tenant uuid.UUID, req *reportsv1.StartLetterRunRequest, loc *time.Location, currency string) (Run, error) {
	var v apperr.Violations
	run := Run{TenantID: tenant, Channel: req.GetChannel(), MarkAcknowledged: req.GetMarkAcknowledged(), FundIDs: []uuid.UUID{}}
	if run.Channel != "pdf" && run.Channel != "email" {
		v.Add("Channel", "'Channel' must be one of: pdf, email.")
	}
	if err := x.checkTemplate(ctx, tenant, req.GetTemplateId(), &run, &v); err != nil {
		return run, err
	}
	readFilter(req.GetFilter(), loc, &run, &v)
	if run.Filter.CohortID != "" {
		run.Filter.CohortCurrency = currency
		if err := x.checkCohort(ctx, run, &v); err != nil {
			return run, err
		}
	}
	if err := v.Err(); err != nil {
		return run, err
	}
	id, err := uuid.NewV7()
	run.ID = id
	return run, err
}

func (x *Server) checkTemplate(ctx context.Context, tenant uuid.UUID, raw string, run *Run, v *apperr.Violations) error {
	id, err := uuid.Parse(raw)
	if err != nil {
		v.Add("TemplateId", "'TemplateId' must be the id of one of the tenant's acknowledgement templates.")
		return nil
	}
	t, err := x.templates.Get(ctx, tenant, id)
	switch {
	case errors.Is(err, db.ErrNotFound):
		v.Add("TemplateId", "'TemplateId' must be the id of one of the tenant's acknowledgement templates.")
	case err != nil:
		return err
	case t.Kind != templates.KindAcknowledgement:
		v.Add("TemplateId", "The template is a %s template; a letter run uses an acknowledgement template.", t.Kind)
	}
	run.TemplateID = id
	return nil
}

// readFilter reads the filter: dates YYYY-MM-DD, inclusive, in the
// profile's time zone, as the bounds [from 00:00, the day after to).
func readFilter(f *reportsv1.LetterRunFilter, loc *time.Location, run *Run, v *apperr.Violations) {
	if f == nil {
		// No filter in the body: its dates are missing (a 400), not a
		// nil dereference.
		f = &reportsv1.LetterRunFilter{}
	}
	run.Filter = Filter{From: f.GetFrom(), To: f.GetTo(), FundIDs: f.GetFundIds(), BatchID: f.GetBatchId(), MinAmount: f.GetMinAmount().GetValue()}
	from, errFrom := time.ParseInLocation(time.DateOnly, f.GetFrom(), loc)
	to, errTo := time.ParseInLocation(time.DateOnly, f.GetTo(), loc)
	switch {
	case errFrom != nil:
		v.Add("Filter.From", "'From' must be a date, YYYY-MM-DD.")
	case errTo != nil:
		v.Add("Filter.To", "'To' must be a date, YYYY-MM-DD.")
	case to.Before(from):
		v.Add("Filter.To", "'To' must not be before 'From'.")
	}
	run.PeriodStart, run.PeriodEnd = from, to.AddDate(0, 0, 1)
	for i, s := range f.GetFundIds() {
		id, err := uuid.Parse(s)
		if err != nil {
			v.Add(fmt.Sprintf("Filter.FundIds[%d]", i), "'FundIds' must be fund ids.")
			continue
		}
		run.FundIDs = append(run.FundIDs, id)
	}
	if f.BatchId != nil {
		id, err := uuid.Parse(f.GetBatchId())
		if err != nil {
			v.Add("Filter.BatchId", "'BatchId' must be a batch id.")
		}
		run.BatchID = &id
	}
	if s := f.GetMinAmount().GetValue(); s != "" {
		// Minor units of two decimals, as the orders list's amount filters.
		m, err := money.ParseMinor(s, "USD")
		if err != nil || m < 0 {
			v.Add("Filter.MinAmount", "'MinAmount' must be an amount such as 100.00.")
		}
		run.MinAmountMinor = &m
	}
	if f.CohortId != nil {
		run.Filter.CohortID = strings.TrimSpace(f.GetCohortId())
		if run.Filter.CohortID == "" {
			v.Add("Filter.CohortId", "'CohortId' must be a cohort's id.")
		}
	}
}

// checkCohort refuses a cohort the tenant does not have (or a store with
// no cohorts wired).
func (x *Server) checkCohort(ctx context.Context, run Run, v *apperr.Violations) error {
	if x.store.Members == nil {
		v.Add("Filter.CohortId", "Cohorts are not available here.")
		return nil
	}
	_, err := x.store.Members(ctx, run.TenantID, run.Filter.CohortCurrency, run.Filter.CohortID)
	if e, ok := apperr.As(err); ok && e.Kind == apperr.KindNotFound {
		v.Add("Filter.CohortId", "'CohortId' must be one of the tenant's cohorts.")
		return nil
	}
	return err
}

// GetLetterRun reads a run.
func (x *Server) GetLetterRun(ctx context.Context, req *reportsv1.GetLetterRunRequest) (*reportsv1.GetLetterRunResponse, error) {
	tenant, _, err := authorize(ctx, req.GetTenantId())
	if err != nil {
		return nil, err
	}
	run, err := x.load(ctx, tenant, req.GetRunId())
	if err != nil {
		return nil, err
	}
	return &reportsv1.GetLetterRunResponse{Run: ToProto(run)}, nil
}

// GetLetterRunDocument streams the run's letters as one PDF, laid out
// with the tenant's branding of now.
func (x *Server) GetLetterRunDocument(req *reportsv1.GetLetterRunDocumentRequest, stream grpc.ServerStreamingServer[httpbody.HttpBody]) error {
	ctx := stream.Context()
	tenant, _, err := authorize(ctx, req.GetTenantId())
	if err != nil {
		return err
	}
	run, err := x.load(ctx, tenant, req.GetRunId())
	if err != nil {
		return err
	}
	if run.Status != "succeeded" {
		return apperr.Conflict("LetterRun.NotFinished", fmt.Sprintf("The run is %s: its letters can be downloaded once it has succeeded.", run.Status))
	}
	base, err := x.frames.LetterBase(ctx, tenant)
	if err != nil {
		return err
	}
	name := "letters-" + run.ID.String() + ".pdf"
	if err := grpc.SetHeader(ctx, metadata.Pairs("content-disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))); err != nil {
		return fmt.Errorf("letters: download run: %w", err)
	}
	// The PDF is complete in memory before its first byte is sent, so a
	// failure is a problem document, never a 200 cut short.
	var buf strings.Builder
	err = render.WriteDocuments(base.Document.PageSize, "Letters", &buf, func(add func(render.Document) error) error {
		return x.store.Documents(ctx, run, func(d render.Document) error {
			d.Brand = base.Document.Brand
			return add(d)
		})
	})
	if err != nil {
		return err
	}
	return sendChunks(stream, buf.String())
}

// sendChunks sends the file in 64 KiB messages.
func sendChunks(stream grpc.ServerStreamingServer[httpbody.HttpBody], s string) error {
	const chunk = 64 << 10
	for len(s) > 0 {
		n := min(chunk, len(s))
		if err := stream.Send(&httpbody.HttpBody{ContentType: "application/pdf", Data: []byte(s[:n])}); err != nil {
			return err
		}
		s = s[n:]
	}
	return nil
}

func (x *Server) load(ctx context.Context, tenant uuid.UUID, raw string) (Run, error) {
	id, err := uuid.Parse(raw)
	if err != nil {
		return Run{}, apperr.NotFound("LetterRun")
	}
	run, err := x.store.Get(ctx, tenant, id)
	if errors.Is(err, db.ErrNotFound) {
		return run, apperr.NotFound("LetterRun")
	}
	return run, err
}

func authorize(ctx context.Context, tenantID string) (uuid.UUID, authctx.Principal, error) {
	p, err := authctx.Require(ctx, tenantID, scopes.DocumentsManage)
	if err != nil {
		return uuid.Nil, p, err
	}
	id, err := uuid.Parse(p.TenantID)
	if err != nil {
		return uuid.Nil, p, apperr.NotFound("Tenant")
	}
	return id, p, nil
}

// ToProto is a run on the wire.
func ToProto(r Run) *reportsv1.LetterRun {
	out := &reportsv1.LetterRun{Id: r.ID.String(), Status: r.Status, TemplateId: r.TemplateID.String(), Channel: r.Channel,
		MarkAcknowledged: r.MarkAcknowledged, Letters: int32(r.Letters), Emailed: int32(r.Emailed), Skipped: int32(r.Skips.Total()),
		SkippedReasons: &reportsv1.LetterRunSkips{NoEmail: int32(r.Skips.NoEmail), DoNotEmail: int32(r.Skips.DoNotEmail),
			DoNotAcknowledge: int32(r.Skips.DoNotAcknowledge), RenderError: int32(r.Skips.RenderError)},
		Error: r.Error, CreatedAt: timestamppb.New(r.CreatedAt),
		Filter: &reportsv1.LetterRunFilter{From: r.Filter.From, To: r.Filter.To, FundIds: r.Filter.FundIDs}}
	if r.Filter.BatchID != "" {
		out.Filter.BatchId = &r.Filter.BatchID
	}
	if r.Filter.MinAmount != "" {
		out.Filter.MinAmount = &typev1.Decimal{Value: r.Filter.MinAmount}
	}
	if r.Filter.CohortID != "" {
		out.Filter.CohortId = &r.Filter.CohortID
	}
	if r.StartedAt != nil {
		out.StartedAt = timestamppb.New(*r.StartedAt)
	}
	if r.FinishedAt != nil {
		out.FinishedAt = timestamppb.New(*r.FinishedAt)
	}
	return out
}
