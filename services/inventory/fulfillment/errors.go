package fulfillment

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/inventory/fulfillment/state"
	"github.com/almoner/almoner/services/inventory/store/shipstore"
)

// Typed codes of the shipments' rules (docs/fulfillment.md).
const (
	codeIllegalTransition = "Shipment.IllegalTransition"
	codeNotEditable       = "Shipment.NotEditable"
	codeInvalidSplit      = "Shipment.InvalidSplit"
	codeNoReservation     = "Shipment.NoReservation"
	codeTooMany           = "Shipment.TooMany"
)

var errShipmentNotFound = apperr.NotFound("Shipment")

// mapError turns the store's errors into the API's; others pass through.
func mapError(err error) error {
	var ie *state.IllegalError
	var se *shipstore.SplitError
	switch {
	case errors.Is(err, db.ErrNotFound):
		return errShipmentNotFound
	case errors.As(err, &ie):
		return apperr.Rule(codeIllegalTransition, ie.Error())
	case errors.Is(err, shipstore.ErrNotEditable):
		return apperr.Rule(codeNotEditable, "The shipment has shipped or was cancelled; its address can no longer change.")
	case errors.As(err, &se) && se.Index >= 0:
		return apperr.FieldRule(codeInvalidSplit, indexPath("Lines", se.Index), se.Message)
	case errors.As(err, &se):
		return apperr.Rule(codeInvalidSplit, se.Message)
	case errors.Is(err, shipstore.ErrNoReservation):
		return apperr.Rule(codeNoReservation, fmt.Sprintf("The order's item lines hold no reservation: %v", errors.Unwrap(err)))
	}
	return err
}

// indexPath is a property path into a list: Lines[2].
func indexPath(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }
