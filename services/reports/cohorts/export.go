package cohorts

import (
	"mime"
	"strings"

	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/reports/render"
	"github.com/almoner/almoner/services/reports/store"
)

// exportColumns are the members' columns, as the reports' exports write
// them (render): amounts in the Currency column's decimals, text that a
// spreadsheet would run as a formula neutralized.
var exportColumns = []store.Column{
	{Key: "ContactId", Label: "Contact ID", Type: store.Integer},
	{Key: "DisplayName", Label: "Name", Type: store.String},
	{Key: "Email", Label: "Email", Type: store.String},
	{Key: "TotalGiven", Label: "Total given", Type: store.Decimal},
	{Key: "GiftCount", Label: "Gifts", Type: store.Integer},
	{Key: "FirstGiftDate", Label: "First gift", Type: store.Date},
	{Key: "LastGiftDate", Label: "Last gift", Type: store.Date},
	{Key: "LargestGift", Label: "Largest gift", Type: store.Decimal},
	{Key: "Currency", Label: "Currency", Type: store.String},
}

// ExportCohort streams every member as CSV or Excel.
func (x *Server) ExportCohort(req *reportsv1.ExportCohortRequest, stream grpc.ServerStreamingServer[httpbody.HttpBody]) error {
	ctx := stream.Context()
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ReportsExport)
	if err != nil {
		return err
	}
	format := strings.ToLower(req.GetFormat())
	f, ok := render.Formats[format]
	if !ok || format == "pdf" {
		return apperr.Invalid(apperr.Violation{Field: "Format", Message: "'Format' must be one of: csv, xlsx."})
	}
	c, err := x.compiler(ctx, p)
	if err != nil {
		return err
	}
	r, err := x.load(ctx, p.Tenant(), c.Calendar, req.GetCohortId())
	if err != nil {
		return err
	}
	q, err := c.Compile(ctx, r.id, r.node)
	if err != nil {
		return err
	}
	name := toProto(r).GetName()
	disp := mime.FormatMediaType("attachment", map[string]string{"filename": render.FileName(name, f.Ext)})
	if err := grpc.SetHeader(ctx, metadata.Pairs("content-disposition", disp)); err != nil {
		return err
	}
	cw := &chunkWriter{stream: stream, contentType: f.ContentType}
	w, err := render.NewWriter(format, render.NewTable(name, exportColumns), render.Meta{Tenant: p.TenantID}, cw)
	if err != nil {
		return err
	}
	err = x.store.Each(ctx, q, func(m Member) error {
		var first, last any
		if m.FirstGiftDate != nil {
			first = *m.FirstGiftDate
		}
		if m.LastGiftDate != nil {
			last = *m.LastGiftDate
		}
		return w.Row(store.Row{m.ContactID, m.DisplayName, m.Email, m.TotalMinor, m.GiftCount, first, last, m.LargestMinor, c.Currency})
	})
	if err != nil {
		w.Abort()
		return err
	}
	if err := w.Close(nil); err != nil {
		return err
	}
	return cw.flush()
}

// chunkWriter sends what it is written as HttpBody chunks of 64 KiB.
type chunkWriter struct {
	stream      grpc.ServerStreamingServer[httpbody.HttpBody]
	contentType string
	buf         []byte
}

const chunkSize = 64 << 10

func (c *chunkWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		take := min(chunkSize-len(c.buf), len(b))
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
