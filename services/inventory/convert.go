package inventory

import (
	"strconv"

	"google.golang.org/protobuf/types/known/timestamppb"

	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/services/inventory/store"
)

func toItem(it store.Item) *inventoryv1.InventoryItem {
	return &inventoryv1.InventoryItem{
		Id:              it.ID.String(),
		Sku:             it.SKU,
		Name:            it.Name,
		Description:     it.Description,
		Price:           decimal(it.PriceMinor, it.Currency),
		Currency:        it.Currency,
		FairMarketValue: decimal(it.FairMarketValueMinor, it.Currency),
		TrackStock:      it.TrackStock,
		StockOnHand:     it.StockOnHand,
		Active:          it.Active,
		Category:        it.Category,
		Location:        it.Location,
		CreatedAt:       timestamppb.New(it.CreatedAt),
		UpdatedAt:       timestamppb.New(it.UpdatedAt),
	}
}

func toReservedLine(r store.Reservation) *inventoryv1.ReservedLine {
	return &inventoryv1.ReservedLine{
		LineNumber:      r.LineNumber,
		ItemId:          r.ItemID.String(),
		Quantity:        r.Quantity,
		Sku:             r.SKU,
		Name:            r.Name,
		UnitPrice:       decimal(r.UnitPriceMinor, r.Currency),
		FairMarketValue: decimal(r.FairMarketValueMinor, r.Currency),
		Currency:        r.Currency,
		StockMoved:      r.StockMoved,
		Replayed:        r.Replayed,
	}
}

func toReleasedLine(r store.Reservation) *inventoryv1.ReleasedLine {
	return &inventoryv1.ReleasedLine{
		LineNumber:    r.LineNumber,
		ItemId:        r.ItemID.String(),
		Quantity:      r.Quantity,
		StockReturned: !r.Replayed && r.StockMoved,
		Replayed:      r.Replayed,
	}
}

// decimal writes minor units as the wire's Decimal with the currency's
// number of decimals.
func decimal(minor int64, currency string) *typev1.Decimal {
	return &typev1.Decimal{Value: money.FormatMinor(minor, currency)}
}

// indexPath is a property path into a list: Items[2].
func indexPath(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }
