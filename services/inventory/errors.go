package inventory

import "github.com/almoner/almoner/pkg/apperr"

// Domain errors of the inventory service.
var (
	errItemNotFound = apperr.NotFound("Inventory item")
)

// Typed codes of the inventory's business rules (docs/inventory.md).
const (
	codeDuplicateSKU        = "Inventory.DuplicateSku"
	codeItemNotFound        = "Inventory.ItemNotFound"
	codeItemInactive        = "Inventory.ItemInactive"
	codeInsufficientStock   = "Inventory.InsufficientStock"
	codeReservationMismatch = "Inventory.ReservationMismatch"
	codeReservationReleased = "Inventory.ReservationReleased"
	codeReservationNotFound = "Inventory.ReservationNotFound"
)
