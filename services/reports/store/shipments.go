package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Shipment is a shipment as a packing slip prints it, read from the
// inventory service's report_shipments_v1 and report_shipment_lines_v1.
type Shipment struct {
	ID          uuid.UUID
	OrderID     uuid.UUID
	OrderNumber int64
	OrderDate   time.Time
	ShipTo      Address
	Lines       []ShipmentLine
}

// ShipmentLine is a packing slip's line: no price, on purpose.
type ShipmentLine struct {
	SKU, Name string
	Quantity  int64
}

// ShipmentSelection chooses shipments: by id when IDs is set, else by
// status and optional batch.
type ShipmentSelection struct {
	IDs     []uuid.UUID
	Status  string
	BatchID *uuid.UUID
}

// selectionWhere is the WHERE of a ShipmentSelection over
// report_shipments_v1, its arguments $1 to $4.
const selectionWhere = `tenant_id = $1
	AND (CASE WHEN $2::uuid[] IS NOT NULL THEN shipment_id = ANY($2)
	     ELSE status = $3 AND ($4::uuid IS NULL OR batch_id = $4) END)`

func (sel ShipmentSelection) args(tenantID uuid.UUID) []any {
	var ids []uuid.UUID
	if sel.IDs != nil {
		ids = sel.IDs
	}
	return []any{tenantID, ids, sel.Status, sel.BatchID}
}

// CountShipments counts the shipments sel chooses.
func (s *Store) CountShipments(ctx context.Context, tenantID uuid.UUID, sel ShipmentSelection) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM inventory.report_shipments_v1 WHERE `+selectionWhere,
		sel.args(tenantID)...).Scan(&n); err != nil {
		return 0, fmt.Errorf("reports: count shipments: %w", err)
	}
	return n, nil
}

// Shipments reads up to limit shipments sel chooses with their lines, in
// order number order (then shipment id: a split order's shipments are
// together).
func (s *Store) Shipments(ctx context.Context, tenantID uuid.UUID, sel ShipmentSelection, limit int) ([]Shipment, error) {
	rows, err := s.pool.Query(ctx, `SELECT shipment_id, order_id, order_number, order_date, shipping_address
		FROM inventory.report_shipments_v1 WHERE `+selectionWhere+` ORDER BY order_number, shipment_id LIMIT $5`,
		append(sel.args(tenantID), limit)...)
	if err != nil {
		return nil, fmt.Errorf("reports: shipments: %w", err)
	}
	shs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Shipment, error) {
		var sh Shipment
		var addr []byte
		if err := r.Scan(&sh.ID, &sh.OrderID, &sh.OrderNumber, &sh.OrderDate, &addr); err != nil {
			return sh, err
		}
		return sh, json.Unmarshal(addr, &sh.ShipTo)
	})
	if err != nil {
		return nil, fmt.Errorf("reports: shipments: %w", err)
	}
	if err := s.shipmentLines(ctx, tenantID, shs); err != nil {
		return nil, fmt.Errorf("reports: shipments: %w", err)
	}
	return shs, nil
}

// shipmentLines reads the lines of shs in line order.
func (s *Store) shipmentLines(ctx context.Context, tenantID uuid.UUID, shs []Shipment) error {
	if len(shs) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(shs))
	at := make(map[uuid.UUID]int, len(shs))
	for i, sh := range shs {
		ids[i], at[sh.ID] = sh.ID, i
	}
	rows, err := s.pool.Query(ctx, `SELECT shipment_id, sku, name, quantity FROM inventory.report_shipment_lines_v1
		WHERE tenant_id = $1 AND shipment_id = ANY($2) ORDER BY shipment_id, line_number`, tenantID, ids)
	if err != nil {
		return fmt.Errorf("read lines: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var l ShipmentLine
		if err := rows.Scan(&id, &l.SKU, &l.Name, &l.Quantity); err != nil {
			return fmt.Errorf("read lines: %w", err)
		}
		shs[at[id]].Lines = append(shs[at[id]].Lines, l)
	}
	return rows.Err()
}

// PickListColumns are the pick list's columns.
var PickListColumns = []Column{
	{Key: "sku", Label: "SKU", Type: String},
	{Key: "name", Label: "Name", Type: String},
	{Key: "quantity", Label: "Quantity", Type: Integer},
	{Key: "shipments", Label: "Shipments", Type: Integer},
	{Key: "location", Label: "Location", Type: String},
}

// PickList is the query of the pick list of the shipments of status (and
// batch): per item, its SKU, name, total quantity, number of shipments and
// bin location, sorted by SKU. Stream runs it.
func PickList(status string, batchID *uuid.UUID) Query {
	return Query{
		SQL: `SELECT l.sku, min(l.name) AS name, sum(l.quantity)::bigint AS quantity,
				count(DISTINCT l.shipment_id)::bigint AS shipments, min(l.location) AS location
			FROM inventory.report_shipment_lines_v1 l
			JOIN inventory.report_shipments_v1 s ON s.tenant_id = l.tenant_id AND s.shipment_id = l.shipment_id
			WHERE l.tenant_id = $1 AND s.status = $2 AND ($3::uuid IS NULL OR s.batch_id = $3)
			GROUP BY l.item_id, l.sku`,
		Args:  []any{status, batchID},
		Order: "lower(sku), sku",
	}
}
