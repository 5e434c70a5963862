package templates

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/protobuf/types/known/timestamppb"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/reports/render"
)

// Server is the DocumentTemplateService.
type Server struct {
	reportsv1.UnimplementedDocumentTemplateServiceServer
	store  *Store
	frames Frames
	// InUse reports whether a queued or running letter run uses a
	// template, inside the delete's transaction; nil: none ever does.
	InUse func(ctx context.Context, tx pgx.Tx, tenant, id uuid.UUID) (bool, error)
}

// NewServer returns the DocumentTemplateService.
func NewServer(st *Store, frames Frames) *Server { return &Server{store: st, frames: frames} }

// CreateDocumentTemplate validates and saves a new template.
func (x *Server) CreateDocumentTemplate(ctx context.Context, req *reportsv1.CreateDocumentTemplateRequest) (*reportsv1.CreateDocumentTemplateResponse, error) {
	tenant, p, err := authorize(ctx, req.GetTenantId())
	if err != nil {
		return nil, err
	}
	t, err := fromProto(tenant, req.GetTemplate(), "")
	if err != nil {
		return nil, err
	}
	saved, err := x.store.Create(ctx, t, p.Actor())
	if err != nil {
		return nil, err
	}
	return &reportsv1.CreateDocumentTemplateResponse{Template: ToProto(saved)}, nil
}

// ListDocumentTemplates lists the tenant's templates.
func (x *Server) ListDocumentTemplates(ctx context.Context, req *reportsv1.ListDocumentTemplatesRequest) (*reportsv1.ListDocumentTemplatesResponse, error) {
	tenant, _, err := authorize(ctx, req.GetTenantId())
	if err != nil {
		return nil, err
	}
	if k := req.GetKind(); k != "" && !validKind(k) {
		return nil, apperr.Invalid(apperr.Violation{Field: "Kind", Message: "'Kind' must be one of: acknowledgement, receipt, statement."})
	}
	list, err := x.store.List(ctx, tenant, req.GetKind())
	if err != nil {
		return nil, err
	}
	out := &reportsv1.ListDocumentTemplatesResponse{Items: make([]*reportsv1.DocumentTemplate, len(list))}
	for i, t := range list {
		out.Items[i] = ToProto(t)
	}
	return out, nil
}

// GetDocumentTemplate reads one template.
func (x *Server) GetDocumentTemplate(ctx context.Context, req *reportsv1.GetDocumentTemplateRequest) (*reportsv1.GetDocumentTemplateResponse, error) {
	tenant, _, err := authorize(ctx, req.GetTenantId())
	if err != nil {
		return nil, err
	}
	t, err := x.load(ctx, tenant, req.GetTemplateId())
	if err != nil {
		return nil, err
	}
	return &reportsv1.GetDocumentTemplateResponse{Template: ToProto(t)}, nil
}

// UpdateDocumentTemplate validates and replaces a template's words.
func (x *Server) UpdateDocumentTemplate(ctx context.Context, req *reportsv1.UpdateDocumentTemplateRequest) (*reportsv1.UpdateDocumentTemplateResponse, error) {
	tenant, p, err := authorize(ctx, req.GetTenantId())
	if err != nil {
		return nil, err
	}
	old, err := x.load(ctx, tenant, req.GetTemplateId())
	if err != nil {
		return nil, err
	}
	t, err := fromProto(tenant, req.GetTemplate(), old.Kind)
	if err != nil {
		return nil, err
	}
	t.ID = old.ID
	saved, err := x.store.Update(ctx, t, p.Actor())
	if err != nil {
		return nil, err
	}
	return &reportsv1.UpdateDocumentTemplateResponse{Template: ToProto(saved)}, nil
}

// DeleteDocumentTemplate deletes a template that is no default and that
// no queued run uses.
func (x *Server) DeleteDocumentTemplate(ctx context.Context, req *reportsv1.DeleteDocumentTemplateRequest) (*reportsv1.DeleteDocumentTemplateResponse, error) {
	tenant, p, err := authorize(ctx, req.GetTenantId())
	if err != nil {
		return nil, err
	}
	t, err := x.load(ctx, tenant, req.GetTemplateId())
	if err != nil {
		return nil, err
	}
	inUse := func(tx pgx.Tx) (bool, error) {
		if x.InUse == nil {
			return false, nil
		}
		return x.InUse(ctx, tx, tenant, t.ID)
	}
	if err := x.store.Delete(ctx, tenant, t.ID, p.Actor(), inUse); err != nil {
		return nil, notFound(err)
	}
	return &reportsv1.DeleteDocumentTemplateResponse{}, nil
}

// PreviewDocumentTemplate renders the template for a gift or a sample:
// a PDF, or sanitized HTML.
func (x *Server) PreviewDocumentTemplate(ctx context.Context, req *reportsv1.PreviewDocumentTemplateRequest) (*httpbody.HttpBody, error) {
	tenant, _, err := authorize(ctx, req.GetTenantId())
	if err != nil {
		return nil, err
	}
	format := req.GetFormat()
	if format != "" && format != "pdf" && format != "html" {
		return nil, apperr.Invalid(apperr.Violation{Field: "Format", Message: "'Format' must be one of: pdf, html."})
	}
	t, err := x.load(ctx, tenant, req.GetTemplateId())
	if err != nil {
		return nil, err
	}
	doc, merge, err := x.frames.Frame(ctx, tenant, t.Kind, req.GetPreview().GetOrderId())
	if err != nil {
		return nil, err
	}
	filled, err := Fill(ctx, t, merge)
	if err != nil {
		return nil, apperr.Unprocessable("DocumentTemplate.RenderFailed", "The template could not be rendered: "+renderReason(err))
	}
	if format == "html" {
		return &httpbody.HttpBody{ContentType: "text/html; charset=utf-8", Data: []byte(Page(filled))}, nil
	}
	var b strings.Builder
	if err := render.WriteDocument(filled.Apply(doc, ""), &b); err != nil {
		return nil, fmt.Errorf("templates: preview: %w", err)
	}
	return &httpbody.HttpBody{ContentType: "application/pdf", Data: []byte(b.String())}, nil
}

// renderReason is what a render failure may tell the client: the limit
// it reached, never an internal error's text.
func renderReason(err error) string {
	if strings.Contains(err.Error(), "1 MiB") {
		return "it makes more than 1 MiB of text."
	}
	if strings.Contains(err.Error(), "took longer") {
		return "it takes longer than 100 ms."
	}
	return "a merge field or the syntax is not valid."
}

// Page is a filled template as a whole HTML page: the subject as its
// title, the sanitized body.
func Page(f Filled) string {
	return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + htmlEscape(f.Subject) + "</title></head>\n<body>\n" +
		HTML(f.Format, f.Body) + "</body></html>\n"
}

func (x *Server) load(ctx context.Context, tenant uuid.UUID, id string) (Template, error) {
	tid, err := uuid.Parse(id)
	if err != nil {
		return Template{}, apperr.NotFound("DocumentTemplate")
	}
	t, err := x.store.Get(ctx, tenant, tid)
	return t, notFound(err)
}

func notFound(err error) error {
	if errors.Is(err, db.ErrNotFound) {
		return apperr.NotFound("DocumentTemplate")
	}
	return err
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

func validKind(k string) bool {
	return k == KindAcknowledgement || k == KindReceipt || k == KindStatement
}

// Limits of a template's texts, in characters.
const (
	maxName    = 200
	maxSubject = 300
	maxBody    = 100_000
)

// fromProto validates a template body. kind is the stored template's
// (an update keeps it), or "" on create (the body's, required).
func fromProto(tenant uuid.UUID, in *reportsv1.DocumentTemplate, kind string) (Template, error) {
	var v apperr.Violations
	if kind == "" {
		if kind = in.GetKind(); !validKind(kind) {
			v.Add("Kind", "'Kind' must be one of: acknowledgement, receipt, statement.")
		}
	}
	format := in.GetFormat()
	if format == "" {
		format = FormatText
	}
	if format != FormatText && format != FormatMarkdown {
		v.Add("Format", "'Format' must be one of: markdown, text.")
	}
	name := strings.TrimSpace(in.GetName())
	if name == "" || utf8.RuneCountInString(name) > maxName {
		v.Add("Name", "'Name' is required, at most %d characters.", maxName)
	}
	if s := in.GetSubject(); strings.TrimSpace(s) == "" || utf8.RuneCountInString(s) > maxSubject || strings.ContainsAny(s, "\r\n") {
		v.Add("Subject", "'Subject' is required: one line of at most %d characters.", maxSubject)
	}
	if utf8.RuneCountInString(in.GetBody()) > maxBody {
		v.Add("Body", "'Body' must be %d characters or fewer.", maxBody)
	}
	if err := v.Err(); err != nil {
		return Template{}, err
	}
	if err := checkTexts(kind, in.GetSubject(), in.GetBody()); err != nil {
		return Template{}, err
	}
	return Template{TenantID: tenant, Kind: kind, Name: name, Subject: in.GetSubject(), Body: in.GetBody(), Format: format}, nil
}

// checkTexts parses the subject and the body; a subject's violation is
// under Subject.
func checkTexts(kind, subject, body string) error {
	if _, err := Parse(kind, subject); err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) && len(ae.Violations) == 1 {
			return apperr.Invalid(apperr.Violation{Field: "Subject", Message: ae.Violations[0].Message})
		}
		return err
	}
	_, err := Parse(kind, body)
	return err
}

// ToProto is a template on the wire.
func ToProto(t Template) *reportsv1.DocumentTemplate {
	return &reportsv1.DocumentTemplate{Id: t.ID.String(), Kind: t.Kind, Name: t.Name, Subject: t.Subject, Body: t.Body, Format: t.Format,
		IsDefault: t.IsDefault, CreatedAt: timestamppb.New(t.CreatedAt), UpdatedAt: timestamppb.New(t.UpdatedAt)}
}
