package inventory

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"

	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/inventory/store"
)

// itemServer serves the public REST resource /api/tenants/{tid}/inventory.
type itemServer struct {
	inventoryv1.UnimplementedInventoryServiceServer
	s *Service
}

// ListInventoryItems returns one page of the tenant's items.
func (a *itemServer) ListInventoryItems(ctx context.Context, req *inventoryv1.ListInventoryItemsRequest) (*inventoryv1.ListInventoryItemsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.InventoryView)
	if err != nil {
		return nil, err
	}
	pg, err := paging.Parse(req.Page, req.PageSize, "", paging.Standard)
	if err != nil {
		return nil, err
	}
	f := store.ListFilter{Active: req.Active, Category: strings.TrimSpace(req.GetCategory()), Search: strings.TrimSpace(req.GetSearch())}
	var v apperr.Violations
	optionalText(&v, "Category", f.Category, maxCategory)
	optionalText(&v, "Search", f.Search, maxSearch)
	if err := v.Err(); err != nil {
		return nil, err
	}
	items, total, err := paging.Offset(pg, func(limit int32, offset int64) ([]store.Item, int64, error) {
		return a.s.store.ListItems(ctx, p.Tenant(), f, limit, offset)
	}, toItem)
	if err != nil {
		return nil, err
	}
	return &inventoryv1.ListInventoryItemsResponse{Items: items, TotalCount: total, Page: pg.Number, PageSize: pg.Size}, nil
}

// GetInventoryItem reads one item; an id that does not parse is not found.
func (a *itemServer) GetInventoryItem(ctx context.Context, req *inventoryv1.GetInventoryItemRequest) (*inventoryv1.GetInventoryItemResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.InventoryView)
	if err != nil {
		return nil, err
	}
	id, err := uuid.Parse(req.GetItemId())
	if err != nil {
		return nil, errItemNotFound
	}
	it, err := a.s.store.GetItem(ctx, p.Tenant(), id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, errItemNotFound
	}
	if err != nil {
		return nil, err
	}
	return &inventoryv1.GetInventoryItemResponse{Item: toItem(it)}, nil
}

// CreateInventoryItem validates and creates an item.
func (a *itemServer) CreateInventoryItem(ctx context.Context, req *inventoryv1.CreateInventoryItemRequest) (*inventoryv1.CreateInventoryItemResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.InventoryCreate)
	if err != nil {
		return nil, err
	}
	it, err := validateItem(ctx, itemInput{
		SKU: req.GetSku(), Name: req.GetName(), Description: req.GetDescription(), Currency: req.GetCurrency(),
		Category: req.GetCategory(), Location: req.GetLocation(), Price: req.GetPrice(), FairMarketValue: req.GetFairMarketValue(),
		TrackStock: req.TrackStock, Active: req.Active, StockOnHand: req.GetStockOnHand(),
	}, a.s.tenantCurrency(p))
	if err != nil {
		return nil, err
	}
	it.TenantID = p.Tenant()
	saved, err := a.s.store.CreateItem(ctx, it, p.Actor())
	if errors.Is(err, store.ErrDuplicateSKU) {
		return nil, duplicateSKU(it.SKU)
	}
	if err != nil {
		return nil, err
	}
	return &inventoryv1.CreateInventoryItemResponse{Item: toItem(saved)}, nil
}

// UpdateInventoryItem replaces every editable field of an item.
func (a *itemServer) UpdateInventoryItem(ctx context.Context, req *inventoryv1.UpdateInventoryItemRequest) (*inventoryv1.UpdateInventoryItemResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.InventoryEdit)
	if err != nil {
		return nil, err
	}
	tenantID := p.Tenant()
	id, err := uuid.Parse(req.GetItemId())
	if err != nil {
		return nil, errItemNotFound
	}
	it, err := validateItem(ctx, itemInput{
		SKU: req.GetSku(), Name: req.GetName(), Description: req.GetDescription(), Currency: req.GetCurrency(),
		Category: req.GetCategory(), Location: req.GetLocation(), Price: req.GetPrice(), FairMarketValue: req.GetFairMarketValue(),
		TrackStock: req.TrackStock, Active: req.Active, StockOnHand: req.GetStockOnHand(),
	}, a.s.tenantCurrency(p))
	if err != nil {
		// A path that does not resolve is 404 whatever the body holds;
		// the read costs nothing on the valid path.
		if apperr.IsKind(err, apperr.KindInvalid) {
			if _, gerr := a.s.store.GetItem(ctx, tenantID, id); errors.Is(gerr, db.ErrNotFound) {
				return nil, errItemNotFound
			}
		}
		return nil, err
	}
	it.TenantID, it.ID = tenantID, id
	saved, err := a.s.store.UpdateItem(ctx, it, p.Actor())
	switch {
	case errors.Is(err, db.ErrNotFound):
		return nil, errItemNotFound
	case errors.Is(err, store.ErrDuplicateSKU):
		return nil, duplicateSKU(it.SKU)
	case err != nil:
		return nil, err
	}
	return &inventoryv1.UpdateInventoryItemResponse{Item: toItem(saved)}, nil
}

// tenantCurrency returns the default-currency reader for p's tenant: the
// currency the principal carries (the gateway asserts it with the key's
// validation), read only for an item given without one.
func (s *Service) tenantCurrency(p authctx.Principal) func(context.Context) (string, error) {
	return func(context.Context) (string, error) { return p.DefaultCurrency() }
}

func duplicateSKU(sku string) error {
	return apperr.FieldRule(codeDuplicateSKU, "Sku", "An item with the SKU '"+truncate(sku, maxSKU)+"' already exists.")
}
