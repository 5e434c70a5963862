// Package fulfillment is the reports service's fulfillment documents:
// packing slips (PDF) and pick lists (CSV or Excel) of the shipments the
// inventory service keeps, read through its report views
// (docs/fulfillment.md). It prints with render, as receipts do, and
// writes the pick list with render's export writers, so its text is
// neutralized as a report export's is.
package fulfillment

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/reports/branding"
	"github.com/almoner/almoner/services/reports/render"
	"github.com/almoner/almoner/services/reports/store"
)

// maxSlips bounds one PDF of packing slips: 2,000 pages render in a few
// seconds and tens of megabytes (docs/performance.md).
const maxSlips = 2000

// chunk is the size of the HttpBody messages a document is streamed in.
const chunk = 256 << 10

var errShipmentNotFound = apperr.NotFound("Shipment")

// statuses a selection may name.
var statuses = map[string]bool{"pending": true, "packed": true, "shipped": true, "delivered": true, "cancelled": true, "returned": true}

// Server serves FulfillmentDocumentService.
type Server struct {
	reportsv1.UnimplementedFulfillmentDocumentServiceServer
	store *store.Store
	brand *branding.Store
	// profile is the organization profile with the tenant's time zone
	// (the tenant settings'), the defaults when none was saved.
	profile func(context.Context, uuid.UUID) (store.Profile, error)
}

// New returns the documents' server on the reports store; slips print the
// tenant's branding (logo and colors) as receipts do, and the order's
// date in the tenant's time zone, read with profile.
func New(st *store.Store, brand *branding.Store, profile func(context.Context, uuid.UUID) (store.Profile, error)) *Server {
	return &Server{store: st, brand: brand, profile: profile}
}

// GetPackingSlip prints one shipment's packing slip.
func (s *Server) GetPackingSlip(req *reportsv1.GetPackingSlipRequest, stream grpc.ServerStreamingServer[httpbody.HttpBody]) error {
	ctx := stream.Context()
	_, tenant, err := principal(ctx, req.GetTenantId())
	if err != nil {
		return err
	}
	id, err := uuid.Parse(req.GetShipmentId())
	if err != nil {
		return errShipmentNotFound
	}
	shs, err := s.store.Shipments(ctx, tenant, store.ShipmentSelection{IDs: []uuid.UUID{id}}, 1)
	if err != nil {
		return err
	}
	if len(shs) == 0 {
		return errShipmentNotFound
	}
	return s.sendSlips(ctx, stream, tenant, "packing-slip-"+strconv.FormatInt(shs[0].OrderNumber, 10)+".pdf", shs)
}

// RenderPackingSlips prints the packing slips of many shipments in one PDF.
func (s *Server) RenderPackingSlips(req *reportsv1.RenderPackingSlipsRequest, stream grpc.ServerStreamingServer[httpbody.HttpBody]) error {
	ctx := stream.Context()
	_, tenant, err := principal(ctx, req.GetTenantId())
	if err != nil {
		return err
	}
	sel, err := selection(req.GetShipmentIds(), req.GetStatus(), req.GetBatchId())
	if err != nil {
		return err
	}
	n, err := s.store.CountShipments(ctx, tenant, sel)
	if err != nil {
		return err
	}
	if n > maxSlips {
		return apperr.Rule("Shipment.TooManySlips",
			fmt.Sprintf("%d shipments match; at most %d packing slips are printed per call: narrow by batch or name the shipments.", n, maxSlips))
	}
	shs, err := s.store.Shipments(ctx, tenant, sel, maxSlips)
	if err != nil {
		return err
	}
	return s.sendSlips(ctx, stream, tenant, "packing-slips.pdf", shs)
}

// principal checks shipments:view for the tenant.
func principal(ctx context.Context, tenantID string) (authctx.Principal, uuid.UUID, error) {
	p, err := authctx.Require(ctx, tenantID, scopes.ShipmentsView)
	if err != nil {
		return authctx.Principal{}, uuid.Nil, err
	}
	return p, p.Tenant(), nil
}

// selection reads the shipments a request chooses.
func selection(ids []string, status, batch string) (store.ShipmentSelection, error) {
	var v apperr.Violations
	var sel store.ShipmentSelection
	if len(ids) > maxSlips {
		return sel, apperr.Rule("Shipment.TooManySlips",
			fmt.Sprintf("%d shipments are named; at most %d packing slips are printed per call.", len(ids), maxSlips))
	}
	if len(ids) > 0 {
		sel.IDs = make([]uuid.UUID, len(ids))
		for i, s := range ids {
			id, err := uuid.Parse(s)
			if err != nil {
				v.Add("ShipmentIds["+strconv.Itoa(i)+"]", "'ShipmentIds' must hold shipment ids.")
			}
			sel.IDs[i] = id
		}
	}
	sel.Status = statusOf(&v, status)
	if b := strings.TrimSpace(batch); b != "" {
		id, err := uuid.Parse(b)
		if err != nil {
			v.Add("BatchId", "'BatchId' must be a UUID.")
		}
		sel.BatchID = &id
	}
	return sel, v.Err()
}

// statusOf reads a status filter; pending when empty.
func statusOf(v *apperr.Violations, status string) string {
	status = strings.TrimSpace(status)
	if status == "" {
		return "pending"
	}
	if !statuses[status] {
		v.Add("Status", "'Status' must be one of pending, packed, shipped, delivered, cancelled, returned.")
	}
	return status
}

// sendSlips renders the slips and streams them, named name.
func (s *Server) sendSlips(ctx context.Context, stream grpc.ServerStreamingServer[httpbody.HttpBody], tenant uuid.UUID, name string, shs []store.Shipment) error {
	// Rendered whole before the first byte is sent, so a failure is still a
	// problem document.
	var buf bytes.Buffer
	if err := s.renderSlips(ctx, tenant, shs, &buf); err != nil {
		return err
	}
	return send(stream, "application/pdf", "inline", name, &buf)
}

// renderSlips writes the packing slips of shs, one PDF, to w.
func (s *Server) renderSlips(ctx context.Context, tenant uuid.UUID, shs []store.Shipment, w io.Writer) error {
	prof, err := s.profile(ctx, tenant)
	if err != nil {
		return err
	}
	brand, err := s.brand.Brand(ctx, tenant)
	if err != nil {
		return err
	}
	docs := make([]render.Document, len(shs))
	for i, sh := range shs {
		docs[i] = slip(prof, sh)
		docs[i].Brand = brand
	}
	size := ""
	if len(docs) > 0 {
		size = docs[0].PageSize
	}
	return render.WriteDocuments(size, "Packing slips", w, func(add func(render.Document) error) error {
		for _, d := range docs {
			if err := add(d); err != nil {
				return err
			}
		}
		return nil
	})
}

// send streams r in chunks of content type ct, named name.
func send(stream grpc.ServerStreamingServer[httpbody.HttpBody], ct, disposition, name string, r io.Reader) error {
	disp := mime.FormatMediaType(disposition, map[string]string{"filename": name})
	if err := grpc.SetHeader(stream.Context(), metadata.Pairs("content-disposition", disp)); err != nil {
		return fmt.Errorf("reports: send document: %w", err)
	}
	buf := make([]byte, chunk)
	sent := false
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 || !sent {
			if serr := stream.Send(&httpbody.HttpBody{ContentType: ct, Data: append([]byte(nil), buf[:n]...)}); serr != nil {
				return serr
			}
			sent = true
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reports: send document: %w", err)
		}
	}
}

// slip lays one shipment's packing slip out: who sends it, where it goes,
// which order, what is in the box. No prices.
func slip(prof store.Profile, sh store.Shipment) render.Document {
	d := render.Document{
		PageSize:     render.PageSize(prof.Country),
		Title:        "Packing slip",
		Organization: append(nonEmpty(prof.LegalName), addressLines(prof.Address)...),
		Facts: [][2]string{{"Order number", strconv.FormatInt(sh.OrderNumber, 10)},
			{"Order date", sh.OrderDate.In(zone(prof)).Format(time.DateOnly)}, {"Shipment", sh.ID.String()}},
		Donor:   append([]string{"Ship to:"}, addressLines(sh.ShipTo)...),
		Columns: []string{"SKU", "Item", "$Quantity"},
	}
	for _, l := range sh.Lines {
		d.Rows = append(d.Rows, []string{l.SKU, l.Name, strconv.FormatInt(l.Quantity, 10)})
	}
	return d
}

// zone is the profile's time zone, UTC when none or unknown.
func zone(p store.Profile) *time.Location {
	if loc, err := time.LoadLocation(p.TimeZone); err == nil && p.TimeZone != "" {
		return loc
	}
	return time.UTC
}

// addressLines prints an address: street lines, "City, ST 12345", country.
func addressLines(a store.Address) []string {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	city := strings.Join(nonEmpty(str(a.City), strings.TrimSpace(str(a.StateProvince)+" "+str(a.PostalCode))), ", ")
	return nonEmpty(a.Line1, str(a.Line2), city, str(a.Country))
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}
