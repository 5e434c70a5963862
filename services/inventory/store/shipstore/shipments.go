// Package shipstore is the SQL of the inventory service's fulfillment
// room: shipments, their lines, their transitions and the stock each
// moves, in one transaction with the shipment's change (docs/fulfillment.md).
package shipstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/inventory/store"
)

// EntityType is the audit entity type of a shipment.
const EntityType = "Shipment"

// Errors the handlers map.
var (
	// ErrNotEditable: the shipment has left (or will never leave) the
	// building; its address and lines are fixed.
	ErrNotEditable = errors.New("shipment not editable")
	// ErrNoReservation: an order line named for a shipment holds no
	// reservation, so the shipment cannot be made from it.
	ErrNoReservation = errors.New("order line holds no reservation")
)

// Store reads and writes shipments. It embeds the core store so a room
// asks one store for items, reservations and shipments.
type Store struct {
	*store.Store
	pool *pgxpool.Pool
	now  func() time.Time
}

// New returns the shipment store on the core store's pool and hooks the
// cancelling of an order's open shipments into its whole-order release.
func New(core *store.Store) *Store {
	s := &Store{Store: core, pool: core.Pool(), now: time.Now}
	core.OnRelease = s.cancelForRelease
	return s
}

// Address is a ship-to address, stored as JSON under its wire names.
type Address struct {
	Line1         string `json:"line1"`
	Line2         string `json:"line2,omitempty"`
	City          string `json:"city"`
	StateProvince string `json:"stateProvince,omitempty"`
	PostalCode    string `json:"postalCode"`
	Country       string `json:"country"`
}

// Line is a shipment line: units of one order line.
type Line struct {
	LineNumber int32
	ItemID     uuid.UUID
	SKU        string
	Name       string
	Quantity   int32
	// StockMoved says the units were taken from stock when reserved, so a
	// cancel or a restock gives them back.
	StockMoved bool
}

// Shipment is a row of inventory.shipments with its lines.
type Shipment struct {
	TenantID       uuid.UUID
	ID             uuid.UUID
	OrderID        uuid.UUID
	OrderNumber    int64
	OrderDate      time.Time
	ContactID      int64
	BatchID        *uuid.UUID
	Status         string
	Address        Address
	Carrier        string
	TrackingNumber string
	TrackingURL    string
	Reason         string
	Restocked      bool
	PackedAt       *time.Time
	ShippedAt      *time.Time
	DeliveredAt    *time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
	Lines          []Line
}

const columns = `tenant_id, id, order_id, order_number, order_date, contact_id, batch_id, status, shipping_address,
	carrier, tracking_number, tracking_url, reason, restocked, packed_at, shipped_at, delivered_at, created_at, updated_at`

func scan(row pgx.Row, extra ...any) (Shipment, error) {
	var sh Shipment
	var addr []byte
	err := row.Scan(append([]any{&sh.TenantID, &sh.ID, &sh.OrderID, &sh.OrderNumber, &sh.OrderDate, &sh.ContactID, &sh.BatchID,
		&sh.Status, &addr, &sh.Carrier, &sh.TrackingNumber, &sh.TrackingURL, &sh.Reason, &sh.Restocked, &sh.PackedAt,
		&sh.ShippedAt, &sh.DeliveredAt, &sh.CreatedAt, &sh.UpdatedAt}, extra...)...)
	if err != nil {
		return Shipment{}, fmt.Errorf("read shipment: %w", db.Interpret(err))
	}
	if err := json.Unmarshal(addr, &sh.Address); err != nil {
		return Shipment{}, fmt.Errorf("read shipment address: %w", err)
	}
	return sh, nil
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// loadLines reads the lines of shs, in line order.
func loadLines(ctx context.Context, q querier, tenantID uuid.UUID, shs []Shipment) error {
	if len(shs) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(shs))
	at := make(map[uuid.UUID]int, len(shs))
	for i, sh := range shs {
		ids[i], at[sh.ID] = sh.ID, i
	}
	rows, err := q.Query(ctx, `SELECT shipment_id, line_number, item_id, sku, name, quantity, stock_moved
		FROM inventory.shipment_lines WHERE tenant_id = $1 AND shipment_id = ANY($2) ORDER BY shipment_id, line_number`, tenantID, ids)
	if err != nil {
		return fmt.Errorf("read shipment lines: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var l Line
		if err := rows.Scan(&id, &l.LineNumber, &l.ItemID, &l.SKU, &l.Name, &l.Quantity, &l.StockMoved); err != nil {
			return fmt.Errorf("read shipment lines: %w", err)
		}
		shs[at[id]].Lines = append(shs[at[id]].Lines, l)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read shipment lines: %w", err)
	}
	return nil
}

// Get reads one shipment with its lines.
func (s *Store) Get(ctx context.Context, tenantID, id uuid.UUID) (Shipment, error) {
	sh, err := scan(s.pool.QueryRow(ctx, `SELECT `+columns+` FROM inventory.shipments WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	if err != nil {
		return Shipment{}, fmt.Errorf("inventory: get shipment %s: %w", id, err)
	}
	one := []Shipment{sh}
	if err := loadLines(ctx, s.pool, tenantID, one); err != nil {
		return Shipment{}, fmt.Errorf("inventory: get shipment %s: %w", id, err)
	}
	return one[0], nil
}

// lock reads and row-locks one shipment with its lines inside tx.
func lock(ctx context.Context, tx pgx.Tx, tenantID, id uuid.UUID) (Shipment, error) {
	sh, err := scan(tx.QueryRow(ctx, `SELECT `+columns+` FROM inventory.shipments WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id))
	if err != nil {
		return Shipment{}, err
	}
	one := []Shipment{sh}
	if err := loadLines(ctx, tx, tenantID, one); err != nil {
		return Shipment{}, err
	}
	return one[0], nil
}

// OrderShipmentIDs returns the ids of an order's shipments, oldest first.
func (s *Store) OrderShipmentIDs(ctx context.Context, tenantID, orderID uuid.UUID) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM inventory.shipments WHERE tenant_id = $1 AND order_id = $2 ORDER BY created_at, id`,
		tenantID, orderID)
	if err != nil {
		return nil, fmt.Errorf("inventory: order shipments: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("inventory: order shipments: %w", err)
	}
	return ids, nil
}
