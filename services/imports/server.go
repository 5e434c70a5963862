package imports

import (
	"context"

	"github.com/google/uuid"

	importsv1 "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/imports/store"
)

type server struct {
	importsv1.UnimplementedImportServiceServer
	s *Service
}

// UploadImport receives a file (upload.go).
func (a *server) UploadImport(stream importsv1.ImportService_UploadImportServer) error {
	resp, err := a.s.upload(stream)
	if err != nil {
		return err
	}
	return stream.SendAndClose(resp)
}

// GetImport reads an import's status and counts.
func (a *server) GetImport(ctx context.Context, req *importsv1.GetImportRequest) (*importsv1.GetImportResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ImportsManage)
	if err != nil {
		return nil, err
	}
	m, err := a.s.get(ctx, p.Tenant(), req.GetImportId())
	if err != nil {
		return nil, err
	}
	return &importsv1.GetImportResponse{Import: toImport(m)}, nil
}

// ListImportErrors lists an import's rejected rows by row number, a page
// at a time.
func (a *server) ListImportErrors(ctx context.Context, req *importsv1.ListImportErrorsRequest) (*importsv1.ListImportErrorsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ImportsManage)
	if err != nil {
		return nil, err
	}
	pg, err := paging.Parse(req.Page, req.PageSize, "", paging.Standard)
	if err != nil {
		return nil, err
	}
	tenantID := p.Tenant()
	m, err := a.s.get(ctx, tenantID, req.GetImportId())
	if err != nil {
		return nil, err
	}
	items, total, err := paging.Offset(pg, func(limit int32, offset int64) ([]store.RowError, int64, error) {
		return a.s.store.ListErrors(ctx, tenantID, m.ID, limit, offset)
	}, toImportError)
	if err != nil {
		return nil, err
	}
	return &importsv1.ListImportErrorsResponse{Items: items, TotalCount: total, Page: pg.Number, PageSize: pg.Size}, nil
}

// get reads the tenant's import named in a path; 404 when the id does
// not parse or names no import of the tenant.
func (s *Service) get(ctx context.Context, tenantID uuid.UUID, rawID string) (store.Import, error) {
	id, err := uuid.Parse(rawID)
	if err != nil {
		return store.Import{}, errImportNotFound
	}
	m, err := s.store.Get(ctx, tenantID, id)
	return db.Found(m, err, errImportNotFound)
}
