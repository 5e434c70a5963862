package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/money"
)

// Item is a row of inventory.items.
type Item struct {
	TenantID             uuid.UUID
	ID                   uuid.UUID
	SKU                  string
	Name                 string
	Description          string
	PriceMinor           int64
	Currency             string
	FairMarketValueMinor int64
	TrackStock           bool
	StockOnHand          int32
	Active               bool
	Category             string
	// Location is where the item sits in the warehouse (a bin), printed
	// on pick lists; empty when none.
	Location  string
	CreatedAt time.Time
	UpdatedAt time.Time
}

const itemColumns = `tenant_id, id, sku, name, description, price_minor, currency, fair_market_value_minor,
	track_stock, stock_on_hand, active, category, created_at, updated_at, location`

// scanItem scans itemColumns, then any further columns into extra.
func scanItem(row pgx.Row, extra ...any) (Item, error) {
	var it Item
	err := row.Scan(append([]any{&it.TenantID, &it.ID, &it.SKU, &it.Name, &it.Description, &it.PriceMinor, &it.Currency,
		&it.FairMarketValueMinor, &it.TrackStock, &it.StockOnHand, &it.Active, &it.Category, &it.CreatedAt, &it.UpdatedAt, &it.Location}, extra...)...)
	if err != nil {
		return Item{}, fmt.Errorf("read inventory item: %w", db.Interpret(err))
	}
	return it, nil
}

// snapshot is the item's editable properties under their wire names, the
// form audit changes are recorded in. Amounts are decimal numbers in the
// item's currency, as integrators see them.
func (it Item) snapshot() map[string]any {
	return map[string]any{
		"sku":             it.SKU,
		"name":            it.Name,
		"description":     it.Description,
		"price":           json.Number(money.FormatMinor(it.PriceMinor, it.Currency)),
		"currency":        it.Currency,
		"fairMarketValue": json.Number(money.FormatMinor(it.FairMarketValueMinor, it.Currency)),
		"trackStock":      it.TrackStock,
		"stockOnHand":     it.StockOnHand,
		"active":          it.Active,
		"category":        it.Category,
		"location":        it.Location,
	}
}

// CreateItem inserts it (ID is set here) and its audit row.
func (s *Store) CreateItem(ctx context.Context, it Item, actor string) (Item, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Item{}, fmt.Errorf("inventory: create item: %w", err)
	}
	var out Item
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		out, err = scanItem(tx.QueryRow(ctx, `
			INSERT INTO inventory.items (tenant_id, id, sku, name, description, price_minor, currency,
				fair_market_value_minor, track_stock, stock_on_hand, active, category, location)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
			RETURNING `+itemColumns,
			it.TenantID, id, it.SKU, it.Name, it.Description, it.PriceMinor, it.Currency,
			it.FairMarketValueMinor, it.TrackStock, it.StockOnHand, it.Active, it.Category, it.Location))
		if err != nil {
			return fmt.Errorf("insert item: %w", err)
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: it.TenantID.String(), EntityType: EntityType,
			EntityID: id.String(), Action: audit.Created, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if db.IsUniqueViolation(err, "items_tenant_sku_key") {
		return Item{}, fmt.Errorf("inventory: create item %s: %w", it.SKU, ErrDuplicateSKU)
	}
	if err != nil {
		return Item{}, fmt.Errorf("inventory: create item: %w", err)
	}
	return out, nil
}

// GetItem reads one item of the tenant.
func (s *Store) GetItem(ctx context.Context, tenantID, id uuid.UUID) (Item, error) {
	it, err := scanItem(s.pool.QueryRow(ctx, `SELECT `+itemColumns+` FROM inventory.items WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	if err != nil {
		return Item{}, fmt.Errorf("inventory: get item %s: %w", id, err)
	}
	return it, nil
}

// UpdateItem replaces the editable fields of the item it.ID with those of
// it, under a row lock, and records what changed. Nothing is written when
// nothing changed.
func (s *Store) UpdateItem(ctx context.Context, it Item, actor string) (Item, error) {
	var out Item
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		// The lock orders this edit with concurrent reservations of the
		// item, so the recorded old stock is the one really replaced.
		before, err := scanItem(tx.QueryRow(ctx, `SELECT `+itemColumns+` FROM inventory.items
			WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, it.TenantID, it.ID))
		if err != nil {
			return fmt.Errorf("lock item: %w", err)
		}
		after := it
		after.CreatedAt, after.UpdatedAt = before.CreatedAt, before.UpdatedAt
		changes := audit.Diff(before.snapshot(), after.snapshot())
		if changes == nil {
			out = before
			return nil
		}
		out, err = scanItem(tx.QueryRow(ctx, `
			UPDATE inventory.items SET sku = $3, name = $4, description = $5, price_minor = $6, currency = $7,
				fair_market_value_minor = $8, track_stock = $9, stock_on_hand = $10, active = $11, category = $12,
				location = $13, updated_at = now()
			WHERE tenant_id = $1 AND id = $2
			RETURNING `+itemColumns,
			it.TenantID, it.ID, it.SKU, it.Name, it.Description, it.PriceMinor, it.Currency,
			it.FairMarketValueMinor, it.TrackStock, it.StockOnHand, it.Active, it.Category, it.Location))
		if err != nil {
			return fmt.Errorf("update item row: %w", err)
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: it.TenantID.String(), EntityType: EntityType,
			EntityID: it.ID.String(), Action: audit.Updated, Changes: changes, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	switch {
	case db.IsUniqueViolation(err, "items_tenant_sku_key"):
		return Item{}, fmt.Errorf("inventory: update item %s: %w", it.ID, ErrDuplicateSKU)
	case err != nil:
		return Item{}, fmt.Errorf("inventory: update item %s: %w", it.ID, err)
	}
	return out, nil
}

// ListFilter narrows a list of items.
type ListFilter struct {
	// Active keeps only items with this state when not nil.
	Active *bool
	// Category keeps only items of this category (letter case ignored)
	// when not empty.
	Category string
	// Search keeps items whose name contains it or whose SKU starts with
	// it (letter case ignored) when not empty.
	Search string
}

// ListItems returns one page of the tenant's items matching f, sorted by
// name then id, and the number of matching items on all pages.
func (s *Store) ListItems(ctx context.Context, tenantID uuid.UUID, f ListFilter, limit int32, offset int64) ([]Item, int64, error) {
	// Search scans the tenant's rows (the primary key's tenant prefix bounds
	// it): catalogs are hundreds to a few thousand items, where a trigram
	// index would cost more in writes and an extension than it saves.
	where := `tenant_id = $1
		AND ($2::boolean IS NULL OR active = $2)
		AND ($3::text = '' OR lower(category) = lower($3::text))
		AND ($4::text = '' OR name ILIKE '%' || $4::text || '%' OR lower(sku) LIKE lower($4::text) || '%')`
	args := []any{tenantID, f.Active, f.Category, likeEscape(f.Search)}
	rows, err := s.pool.Query(ctx, `SELECT `+itemColumns+`, count(*) OVER ()
		FROM inventory.items WHERE `+where+`
		ORDER BY lower(name), name, id LIMIT $5 OFFSET $6`, append(args, limit, offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("inventory: list items: %w", err)
	}
	var total int64
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Item, error) {
		var it Item
		err := r.Scan(&it.TenantID, &it.ID, &it.SKU, &it.Name, &it.Description, &it.PriceMinor, &it.Currency,
			&it.FairMarketValueMinor, &it.TrackStock, &it.StockOnHand, &it.Active, &it.Category, &it.CreatedAt, &it.UpdatedAt, &it.Location, &total)
		return it, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("inventory: list items: %w", err)
	}
	// A page past the end has no row to carry the window count.
	if len(items) == 0 && offset > 0 {
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM inventory.items WHERE `+where, args...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("inventory: count items: %w", err)
		}
	}
	return items, total, nil
}

// likeEscape makes s match literally inside a LIKE pattern (whose escape
// character is the backslash by default).
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
