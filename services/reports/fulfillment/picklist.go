package fulfillment

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/services/reports/render"
	"github.com/almoner/almoner/services/reports/store"
)

// GetPickList writes the pick list of the shipments of a status (and
// batch) as CSV or Excel, with render's export writers.
func (s *Server) GetPickList(req *reportsv1.GetPickListRequest, stream grpc.ServerStreamingServer[httpbody.HttpBody]) error {
	ctx := stream.Context()
	_, tenant, err := principal(ctx, req.GetTenantId())
	if err != nil {
		return err
	}
	sel, err := selection(nil, req.GetStatus(), req.GetBatchId())
	format := strings.ToLower(strings.TrimSpace(req.GetFormat()))
	if format == "" {
		format = "csv"
	}
	if format != "csv" && format != "xlsx" {
		var v apperr.Violations
		v.Add("Format", "'Format' must be csv or xlsx.")
		return v.Err()
	}
	if err != nil {
		return err
	}
	f := render.Formats[format]
	var buf strings.Builder
	if err := s.writePickList(ctx, &buf, tenant, format, sel); err != nil {
		return err
	}
	return send(stream, f.ContentType, "attachment", "pick-list-"+sel.Status+"."+f.Ext, strings.NewReader(buf.String()))
}

// writePickList streams the pick list's rows through the export writer.
func (s *Server) writePickList(ctx context.Context, w *strings.Builder, tenant uuid.UUID, format string, sel store.ShipmentSelection) error {
	t := render.NewTable("Pick list", store.PickListColumns)
	ew, err := render.NewWriter(format, t, render.Meta{Generated: time.Now()}, w)
	if err != nil {
		return err
	}
	_, _, err = s.store.Stream(ctx, tenant, store.PickList(sel.Status, sel.BatchID), store.PickListColumns, ew.Row)
	if err != nil {
		ew.Abort()
		return err
	}
	return ew.Close(nil)
}
