package reports

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/reports/render"
	"github.com/almoner/almoner/services/reports/store"
)

// runLimits are a report run's page sizes: 50 by default (the reference
// system's), at most 1000.
var runLimits = paging.Limits{Default: 50, Max: 1000}

type server struct {
	reportsv1.UnimplementedReportServiceServer
	s *Service
}

func (x *server) ListReportTypes(ctx context.Context, req *reportsv1.ListReportTypesRequest) (*reportsv1.ListReportTypesResponse, error) {
	if _, err := authctx.Require(ctx, req.GetTenantId(), scopes.ReportsView); err != nil {
		return nil, err
	}
	now := x.s.cfg.Now()
	out := &reportsv1.ListReportTypesResponse{}
	for _, t := range Catalog {
		rt := &reportsv1.ReportType{Key: t.Key, Name: t.Name, Description: t.Description}
		for _, p := range t.Params {
			rp := &reportsv1.ReportParameter{Key: p.Key, Type: p.Type, Required: p.Required, AllowedValues: p.Allowed, Description: p.Description}
			if rp.AllowedValues == nil {
				rp.AllowedValues = []string{}
			}
			if p.Default != nil {
				rp.DefaultValue = p.Default(now)
			}
			rt.Parameters = append(rt.Parameters, rp)
		}
		for _, c := range t.Columns {
			rt.Columns = append(rt.Columns, &reportsv1.ReportColumn{Key: c.Key, Label: c.Label, Type: c.Type})
		}
		out.Items = append(out.Items, rt)
	}
	return out, nil
}

func tenantUUID(p authctx.Principal) (uuid.UUID, error) {
	id, err := uuid.Parse(p.TenantID)
	if err != nil {
		return uuid.Nil, apperr.NotFound("Tenant")
	}
	return id, nil
}

// runToken is the cursor of a run: the next row's offset, bound to the
// report and its parameters so a token cannot be replayed on another run.
type runToken struct {
	Offset int64  `json:"o"`
	Key    string `json:"k"`
}

func runKey(typeKey string, params map[string]string) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(typeKey)
	for _, k := range keys {
		fmt.Fprintf(&b, "|%s=%s", strings.ToLower(k), params[k])
	}
	return b.String()
}

// run runs t with raw parameters and renders one page.
func (x *server) run(ctx context.Context, p authctx.Principal, t *Type, raw map[string]string, reportID *uuid.UUID, pg paging.Page) (*httpbody.HttpBody, error) {
	vals, clean, err := t.resolve(raw, x.s.cfg.Now())
	if err != nil {
		return nil, err
	}
	tenant, err := tenantUUID(p)
	if err != nil {
		return nil, err
	}
	key := runKey(t.Key, clean)
	offset := pg.Offset()
	if pg.Token != nil {
		var tok runToken
		if err := paging.DecodeToken(pg.Token, &tok); err != nil {
			return nil, err
		}
		if tok.Key != key || tok.Offset < 0 {
			return nil, apperr.Invalid(apperr.Violation{Field: "PageToken", Message: "'PageToken' does not belong to this report run."})
		}
		offset = tok.Offset
		pg.Number = int32(offset/int64(pg.Size)) + 1
	}
	q, err := x.s.cohortFilter(ctx, p, vals, t.build(vals))
	if err != nil {
		return nil, err
	}
	start := time.Now()
	rows, total, totals, err := x.s.store.Page(ctx, tenant, q, t.Columns, offset, int64(pg.Size))
	if err != nil {
		return nil, err
	}
	next := ""
	if offset+int64(len(rows)) < total {
		next = paging.EncodeToken(runToken{Offset: offset + int64(len(rows)), Key: key})
	}
	if err := x.s.store.RecordRun(ctx, store.Run{TenantID: tenant, ReportID: reportID, TypeKey: t.Key, Parameters: clean, Kind: "run",
		RowCount: int64(len(rows)), Duration: time.Since(start), Actor: p.Actor()}); err != nil {
		return nil, err
	}
	doc := render.Run{Table: render.NewTable(t.Name, t.Columns), Rows: rows, Totals: totals, TotalCount: total, Page: pg.Number, Size: pg.Size, NextPageToken: next}
	return &httpbody.HttpBody{ContentType: "application/json", Data: doc.JSON()}, nil
}

func (x *server) RunReportType(ctx context.Context, req *reportsv1.RunReportTypeRequest) (*httpbody.HttpBody, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ReportsView)
	if err != nil {
		return nil, err
	}
	t := typeByKey(req.GetTypeKey())
	if t == nil {
		return nil, apperr.NotFound("Report type")
	}
	pg, err := paging.Parse(req.Page, req.PageSize, req.GetPageToken(), runLimits)
	if err != nil {
		return nil, err
	}
	var v apperr.Violations
	raw := rawParams(req.GetBody().GetParameters(), &v)
	if err := v.Err(); err != nil {
		return nil, err
	}
	return x.run(ctx, p, t, raw, nil, pg)
}

func parseID(id string) (uuid.UUID, error) {
	u, err := uuid.Parse(id)
	if err != nil || len(id) != 36 {
		return uuid.Nil, apperr.NotFound("Report")
	}
	return u, nil
}

func (x *server) load(ctx context.Context, p authctx.Principal, reportID string) (store.Definition, error) {
	tenant, err := tenantUUID(p)
	if err != nil {
		return store.Definition{}, err
	}
	id, err := parseID(reportID)
	if err != nil {
		return store.Definition{}, err
	}
	d, err := x.s.store.Get(ctx, tenant, id)
	if errors.Is(err, db.ErrNotFound) {
		return d, apperr.NotFound("Report")
	}
	return d, err
}

func (x *server) ListReports(ctx context.Context, req *reportsv1.ListReportsRequest) (*reportsv1.ListReportsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ReportsView)
	if err != nil {
		return nil, err
	}
	pg, err := paging.Parse(req.Page, req.PageSize, "", paging.Standard)
	if err != nil {
		return nil, err
	}
	tenant, err := tenantUUID(p)
	if err != nil {
		return nil, err
	}
	defs, total, err := x.s.store.List(ctx, tenant, pg.Offset(), int64(pg.Size))
	if err != nil {
		return nil, err
	}
	out := &reportsv1.ListReportsResponse{Items: []*reportsv1.ReportSummary{}, TotalCount: int32(total), Page: pg.Number, PageSize: pg.Size}
	for _, d := range defs {
		out.Items = append(out.Items, &reportsv1.ReportSummary{Id: d.ID.String(), Name: d.Name, DataSourceKey: d.TypeKey, IsShared: true})
	}
	return out, nil
}

func toProto(d store.Definition) *reportsv1.Report {
	params := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for k, v := range d.Parameters {
		params.Fields[k] = structpb.NewStringValue(v)
	}
	return &reportsv1.Report{Id: d.ID.String(), Name: d.Name, Description: d.Description, TypeKey: d.TypeKey, DataSourceKey: d.TypeKey,
		IsShared: true, Parameters: params, CreatedAt: timestamppb.New(d.CreatedAt), UpdatedAt: timestamppb.New(d.UpdatedAt)}
}

func (x *server) GetReport(ctx context.Context, req *reportsv1.GetReportRequest) (*reportsv1.GetReportResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ReportsView)
	if err != nil {
		return nil, err
	}
	d, err := x.load(ctx, p, req.GetReportId())
	if err != nil {
		return nil, err
	}
	return &reportsv1.GetReportResponse{Report: toProto(d)}, nil
}

// validateDefinition checks a definition's fields and its parameters
// against the type, returning the parameters to save.
func (x *server) validateDefinition(name, description, typeKey string, params *structpb.Struct) (map[string]string, error) {
	var v apperr.Violations
	switch {
	case strings.TrimSpace(name) == "":
		v.Add("Name", "'Name' must not be empty.")
	case utf8.RuneCountInString(name) > 200:
		v.Add("Name", "'Name' must be 200 characters or fewer.")
	}
	if utf8.RuneCountInString(description) > 2000 {
		v.Add("Description", "'Description' must be 2000 characters or fewer.")
	}
	t := typeByKey(typeKey)
	if t == nil {
		if typeKey == "" {
			v.Add("TypeKey", "'TypeKey' must not be empty.")
		} else {
			v.Add("TypeKey", "'TypeKey' is not a report type.")
		}
	}
	raw := rawParams(params, &v)
	if err := v.Err(); err != nil {
		return nil, err
	}
	_, clean, err := t.resolve(raw, x.s.cfg.Now())
	return clean, err
}

// definitionType reads a definition's type from typeKey and from
// dataSourceKey, the reference system's name for it (what integrators of
// that system send, and what the list returns): either may be given, and
// both only when equal. isShared, the reference system's flag for a
// definition its whole organization sees, may be given as true, which
// every definition is: it belongs to the tenant, not to a key. false is
// refused rather than ignored, since the definition would be shared
// anyway.
func definitionType(typeKey, dataSourceKey string, isShared *bool) (string, error) {
	var v apperr.Violations
	if typeKey != "" && dataSourceKey != "" && typeKey != dataSourceKey {
		v.Add("DataSourceKey", "'DataSourceKey' names the report type too; it must equal 'TypeKey' when both are given.")
	}
	if isShared != nil && !*isShared {
		v.Add("IsShared", "'IsShared' cannot be false: saved reports belong to the tenant and every key with reports:view sees them.")
	}
	if typeKey == "" {
		typeKey = dataSourceKey
	}
	return typeKey, v.Err()
}

func (x *server) CreateReport(ctx context.Context, req *reportsv1.CreateReportRequest) (*reportsv1.CreateReportResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ReportsManage)
	if err != nil {
		return nil, err
	}
	tenant, err := tenantUUID(p)
	if err != nil {
		return nil, err
	}
	typeKey, err := definitionType(req.GetTypeKey(), req.GetDataSourceKey(), req.IsShared)
	if err != nil {
		return nil, err
	}
	params, err := x.validateDefinition(req.GetName(), req.GetDescription(), typeKey, req.GetParameters())
	if err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	d, err := x.s.store.Create(ctx, store.Definition{TenantID: tenant, ID: id, Name: strings.TrimSpace(req.GetName()), Description: req.GetDescription(),
		TypeKey: typeKey, Parameters: params}, p.Actor())
	if err != nil {
		return nil, err
	}
	return &reportsv1.CreateReportResponse{Report: toProto(d)}, nil
}

func (x *server) UpdateReport(ctx context.Context, req *reportsv1.UpdateReportRequest) (*reportsv1.UpdateReportResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ReportsManage)
	if err != nil {
		return nil, err
	}
	d, err := x.load(ctx, p, req.GetReportId())
	if err != nil {
		return nil, err
	}
	typeKey, err := definitionType(req.GetTypeKey(), req.GetDataSourceKey(), req.IsShared)
	if err != nil {
		return nil, err
	}
	if typeKey == "" {
		typeKey = d.TypeKey
	}
	params, err := x.validateDefinition(req.GetName(), req.GetDescription(), typeKey, req.GetParameters())
	if err != nil {
		return nil, err
	}
	d.Name, d.Description, d.TypeKey, d.Parameters = strings.TrimSpace(req.GetName()), req.GetDescription(), typeKey, params
	d, err = x.s.store.Update(ctx, d, p.Actor())
	if errors.Is(err, db.ErrNotFound) {
		return nil, apperr.NotFound("Report")
	}
	if err != nil {
		return nil, err
	}
	return &reportsv1.UpdateReportResponse{Report: toProto(d)}, nil
}

func (x *server) DeleteReport(ctx context.Context, req *reportsv1.DeleteReportRequest) (*reportsv1.DeleteReportResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ReportsManage)
	if err != nil {
		return nil, err
	}
	d, err := x.load(ctx, p, req.GetReportId())
	if err != nil {
		return nil, err
	}
	err = x.s.store.Delete(ctx, d.TenantID, d.ID, p.Actor())
	if errors.Is(err, db.ErrNotFound) {
		return nil, apperr.NotFound("Report")
	}
	if err != nil {
		return nil, err
	}
	return &reportsv1.DeleteReportResponse{}, nil
}

func (x *server) RunReport(ctx context.Context, req *reportsv1.RunReportRequest) (*httpbody.HttpBody, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ReportsView)
	if err != nil {
		return nil, err
	}
	d, err := x.load(ctx, p, req.GetReportId())
	if err != nil {
		return nil, err
	}
	t := typeByKey(d.TypeKey)
	if t == nil {
		return nil, apperr.NotFound("Report type")
	}
	pg, err := paging.Parse(req.Page, req.PageSize, req.GetPageToken(), runLimits)
	if err != nil {
		return nil, err
	}
	var v apperr.Violations
	over := rawParams(req.GetBody().GetParameters(), &v)
	if err := v.Err(); err != nil {
		return nil, err
	}
	return x.run(ctx, p, t, merge(d.Parameters, over), &d.ID, pg)
}

// chunkWriter sends what an export writes as HttpBody messages of about
// 64 KiB, so the gateway streams the file as it is made.
type chunkWriter struct {
	stream      grpc.ServerStreamingServer[httpbody.HttpBody]
	contentType string
	buf         []byte
}

const chunkSize = 64 << 10

func (c *chunkWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		room := chunkSize - len(c.buf)
		take := min(room, len(b))
		c.buf = append(c.buf, b[:take]...)
		b = b[take:]
		if len(c.buf) == chunkSize {
			if err := c.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (c *chunkWriter) flush() error {
	if len(c.buf) == 0 {
		return nil
	}
	err := c.stream.Send(&httpbody.HttpBody{ContentType: c.contentType, Data: c.buf})
	c.buf = c.buf[:0]
	return err
}

var _ io.Writer = (*chunkWriter)(nil)

func (x *server) ExportReport(req *reportsv1.ExportReportRequest, stream grpc.ServerStreamingServer[httpbody.HttpBody]) error {
	ctx := stream.Context()
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ReportsExport)
	if err != nil {
		return err
	}
	format := strings.ToLower(req.GetFormat())
	f, ok := render.Formats[format]
	if !ok {
		return apperr.Invalid(apperr.Violation{Field: "Format", Message: "'Format' must be one of: csv, xlsx, pdf."})
	}
	e, err := x.exportOf(ctx, p, req, format)
	if err != nil {
		return err
	}
	start := time.Now()
	n, err := x.writeExport(ctx, stream, e, f, format)
	if err != nil {
		return err
	}
	return x.s.store.RecordRun(ctx, store.Run{TenantID: e.d.TenantID, ReportID: &e.d.ID, TypeKey: e.t.Key, Parameters: e.clean, Kind: "export",
		Format: format, RowCount: n, Duration: time.Since(start), Actor: p.Actor()})
}

// export is a saved report resolved for one export: its definition and
// type, the parameters (as given and as recorded) and the query.
type export struct {
	d     store.Definition
	t     *Type
	vals  Values
	clean map[string]string
	q     store.Query
}

// exportOf loads the saved report, resolves its parameters with the
// request's and builds its query. A PDF's row limit is checked here, while
// the answer can still be a problem document: a PDF is made in memory.
// CSV and Excel have none and run the query once, adding the totals up
// as the rows pass.
func (x *server) exportOf(ctx context.Context, p authctx.Principal, req *reportsv1.ExportReportRequest, format string) (export, error) {
	d, err := x.load(ctx, p, req.GetReportId())
	if err != nil {
		return export{}, err
	}
	t := typeByKey(d.TypeKey)
	if t == nil {
		return export{}, apperr.NotFound("Report type")
	}
	var v apperr.Violations
	over := rawParams(req.GetBody().GetParameters(), &v)
	if err := v.Err(); err != nil {
		return export{}, err
	}
	vals, clean, err := t.resolve(merge(d.Parameters, over), x.s.cfg.Now())
	if err != nil {
		return export{}, err
	}
	q, err := x.s.cohortFilter(ctx, p, vals, t.build(vals))
	if err != nil {
		return export{}, err
	}
	e := export{d: d, t: t, vals: vals, clean: clean, q: q}
	if format == "pdf" {
		count, err := x.s.store.Count(ctx, d.TenantID, e.q)
		if err != nil {
			return export{}, err
		}
		if count > render.MaxPDFRows {
			return export{}, apperr.Unprocessable("Report.TooLargeForPdf", fmt.Sprintf("A PDF export holds at most %d rows; this report has %d. Export CSV or Excel instead.", render.MaxPDFRows, count))
		}
	}
	return e, nil
}

// writeExport streams the export as the file (its name in
// Content-Disposition) and reports how many rows it held.
func (x *server) writeExport(ctx context.Context, stream grpc.ServerStreamingServer[httpbody.HttpBody], e export, f render.Format, format string) (int64, error) {
	disp := mime.FormatMediaType("attachment", map[string]string{"filename": render.FileName(e.d.Name, f.Ext)})
	if err := grpc.SetHeader(ctx, metadata.Pairs("content-disposition", disp)); err != nil {
		return 0, err
	}
	cw := &chunkWriter{stream: stream, contentType: f.ContentType}
	w, err := render.NewWriter(format, render.NewTable(e.d.Name, e.t.Columns),
		render.Meta{Tenant: e.d.TenantID.String(), Params: paramList(e.t, e.vals), Generated: x.s.cfg.Now()}, cw)
	if err != nil {
		return 0, err
	}
	n, totals, err := x.s.store.Stream(ctx, e.d.TenantID, e.q, e.t.Columns, w.Row)
	if err != nil {
		w.Abort()
		return 0, err
	}
	if err := w.Close(totals); err != nil {
		return 0, err
	}
	return n, cw.flush()
}

// paramList is the run's resolved parameters for an export's header.
func paramList(t *Type, v Values) [][2]string {
	var out [][2]string
	for _, p := range t.Params {
		val, ok := v[p.Key]
		if !ok {
			continue
		}
		s := fmt.Sprint(val)
		if tm, ok := val.(time.Time); ok {
			s = tm.Format(time.DateOnly)
		}
		out = append(out, [2]string{p.Key, s})
	}
	return out
}
