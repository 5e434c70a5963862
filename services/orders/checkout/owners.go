package checkout

import (
	"context"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/wire"
)

// checkMethodOwners refuses an order that pays, now or by a schedule,
// with a method saved for another contact of the tenant: a saved method's
// id is a charge on that donor's card, so it may pay only for its own
// contact's gifts. It runs before anything is reserved or charged, and
// whether or not the tenant's processor is loaded for the order (a cash
// order's schedule is charged by the runner later). A token never saved
// here is left to the processor, which refuses a method attached to
// another customer. It returns the tokens' rows, read once: the charges
// take their customer from them (charge, keepMethods).
func (s *Service) checkMethodOwners(ctx context.Context, tenantID uuid.UUID, contactID int64, d draft) (map[string]store.KnownMethod, error) {
	type use struct{ token, path string }
	var uses []use
	for i, pd := range d.payments {
		if pd.viaProcessor() && pd.token != "" {
			uses = append(uses, use{pd.token, wire.IndexPath("Payments", i) + ".PaymentToken"})
		}
	}
	for i, sc := range d.schedules {
		if store.ViaProcessor(sc.PaymentMethod) && sc.PaymentToken != "" {
			uses = append(uses, use{sc.PaymentToken, wire.IndexPath("RecurringDonations", i) + ".PaymentToken"})
		}
	}
	tokens := make([]string, len(uses))
	for i, u := range uses {
		tokens[i] = u.token
	}
	known, err := s.store.KnownMethods(ctx, tenantID, tokens)
	if err != nil {
		return nil, err
	}
	var refused []apperr.Violation
	for _, u := range uses {
		if m, ok := known[u.token]; ok && m.ContactID != contactID {
			refused = append(refused, apperr.Violation{Field: u.path,
				Message: "Payment method '" + u.token + "' is saved for another contact; a saved method pays only for its own contact's gifts."})
		}
	}
	if len(refused) == 0 {
		return known, nil
	}
	return nil, &apperr.Error{Kind: apperr.KindInvalid, Code: wire.CodeMethodNotOwned, Message: "One or more validation errors occurred.", Violations: refused}
}
