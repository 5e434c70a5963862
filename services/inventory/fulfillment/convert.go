package fulfillment

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	"github.com/almoner/almoner/services/inventory/store/shipstore"
)

func toShipment(sh shipstore.Shipment) *inventoryv1.Shipment {
	out := &inventoryv1.Shipment{
		Id: sh.ID.String(), OrderId: sh.OrderID.String(), OrderNumber: sh.OrderNumber, ContactId: sh.ContactID,
		Status: sh.Status, ShippingAddress: toAddress(sh.Address), Carrier: sh.Carrier, TrackingNumber: sh.TrackingNumber,
		TrackingUrl: sh.TrackingURL, Reason: sh.Reason, Restocked: sh.Restocked, PackedAt: stamp(sh.PackedAt),
		ShippedAt: stamp(sh.ShippedAt), DeliveredAt: stamp(sh.DeliveredAt), CreatedAt: timestamppb.New(sh.CreatedAt),
		UpdatedAt: timestamppb.New(sh.UpdatedAt), OrderDate: timestamppb.New(sh.OrderDate),
	}
	if sh.BatchID != nil {
		out.BatchId = sh.BatchID.String()
	}
	for _, l := range sh.Lines {
		out.Lines = append(out.Lines, &inventoryv1.ShipmentLine{ItemId: l.ItemID.String(), Sku: l.SKU, Name: l.Name,
			Quantity: l.Quantity, LineNumber: l.LineNumber})
	}
	return out
}

func toAddress(a shipstore.Address) *inventoryv1.ShippingAddress {
	return &inventoryv1.ShippingAddress{Line1: a.Line1, Line2: a.Line2, City: a.City, StateProvince: a.StateProvince,
		PostalCode: a.PostalCode, Country: a.Country}
}

func stamp(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}
