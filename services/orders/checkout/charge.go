package checkout

import (
	"context"
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"google.golang.org/grpc/metadata"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/ratelimit"
	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/tenantproc"
	"github.com/almoner/almoner/services/orders/wire"
)

// collect charges the order's processor payments, last of all the steps
// that can refuse the order without the donor's bank being involved, and
// records cash, check and external payments as received. Methods the
// donor asked to keep, and the methods of recurring schedules paid by
// card or bank debit, are attached to the contact's processor customer
// first, so the charge can save them for later. Each charge registers its
// undo (a cancel, or a refund once money moved).
func (s *Service) collect(ctx context.Context, p authctx.Principal, tp tenantproc.Account, n *store.NewOrder, d draft, u *undo) error {
	kept := map[string]store.PaymentMethod{}
	if keep := methodsToKeep(d); len(keep) > 0 && tp.Processor != nil {
		var err error
		if kept, err = s.keepMethods(ctx, tp, n, d, keep); err != nil {
			return err
		}
	}
	// Schedules are charged later with the method as kept (a processor may
	// give a test card a new id when attaching it).
	for i, sc := range n.Schedules {
		if m, ok := kept[sc.PaymentToken]; ok {
			n.Schedules[i].PaymentToken = m.ID
		}
	}
	for i, pd := range d.payments {
		pd.ID = store.PaymentID(n.ID, i)
		pay := pd.Payment
		pay.Status = store.PaymentCaptured
		if pd.viaProcessor() {
			if n.Number == 0 {
				// The charge names the order's number, so it is taken now.
				var err error
				if n.Number, err = s.orderNumber(ctx, n); err != nil {
					return err
				}
			}
			var err error
			if pay, err = s.charge(ctx, tp, n, i, pd, kept, d.knownMethods, u); err != nil {
				return err
			}
			if pay.Status != store.PaymentCaptured {
				n.Status = store.StatusPending
			}
		}
		n.Payments = append(n.Payments, pay)
	}
	return nil
}

// orderNumber takes the order's number ahead of recording it; a keyed
// request's claim keeps it for the retry.
func (s *Service) orderNumber(ctx context.Context, n *store.NewOrder) (int64, error) {
	if n.Idempotency != nil {
		return s.store.ClaimNumber(ctx, n.TenantID, n.Idempotency.Key, n.ID)
	}
	return s.store.NextOrderNumber(ctx, n.TenantID)
}

// methodsToKeep are the tokens to attach to the contact's customer: those
// of payments saved by request, and those of card and bank-debit
// schedules, which are charged later without the donor.
func methodsToKeep(d draft) map[string]bool {
	keep := map[string]bool{}
	for _, pd := range d.payments {
		if pd.viaProcessor() && pd.save {
			keep[pd.token] = true
		}
	}
	for _, sc := range d.schedules {
		if store.ViaProcessor(sc.PaymentMethod) && sc.PaymentToken != "" {
			keep[sc.PaymentToken] = true
		}
	}
	return keep
}

// keepMethods attaches each method to the contact's processor customer
// (made on first use) and adds it to the order's saved methods. It
// returns the kept methods by the token they were given as; a method the
// contact has saved already is used as it is.
func (s *Service) keepMethods(ctx context.Context, tp tenantproc.Account, n *store.NewOrder, d draft, keep map[string]bool) (map[string]store.PaymentMethod, error) {
	kept := map[string]store.PaymentMethod{}
	customer, err := s.customerFor(ctx, tp, n.TenantID.String(), n.ContactID)
	if err != nil {
		return nil, err
	}
	for pm := range keep {
		if m, ok := d.knownMethods[pm]; ok && m.SavedFor(tp.Name, n.ContactID) {
			kept[pm] = m.PaymentMethod
			continue
		}
		got, err := tp.AttachPaymentMethod(ctx, pm, customer, "attach/"+n.ID.String()+"/"+pm)
		if err != nil {
			return nil, processorError(err, tokenField(d, pm))
		}
		m := store.PaymentMethod{TenantID: n.TenantID, ID: got.ID, ContactID: n.ContactID, Provider: tp.Name,
			Mode: tp.Mode, CustomerID: customer, Type: got.Type, Brand: got.Brand, Last4: got.Last4, ExpMonth: got.ExpMonth, ExpYear: got.ExpYear}
		n.SavedMethods = append(n.SavedMethods, m)
		kept[pm] = m
	}
	return kept, nil
}

// tokenField is the property path of the first payment (or else
// schedule) that named a token, so a form can show a refusal beside it.
func tokenField(d draft, token string) string {
	for i, pd := range d.payments {
		if pd.token == token {
			return wire.IndexPath("Payments", i) + ".PaymentToken"
		}
	}
	for i, sc := range d.schedules {
		if sc.PaymentToken == token {
			return wire.IndexPath("RecurringDonations", i) + ".PaymentToken"
		}
	}
	return "PaymentToken"
}

// customerFor returns the contact's customer at the tenant's processor,
// creating it on first use. Its creation is idempotent by tenant, contact
// and mode, so two orders racing make one customer.
func (s *Service) customerFor(ctx context.Context, tp tenantproc.Account, tenantID string, contactID int64) (string, error) {
	tid := uuid.MustParse(tenantID)
	if id, ok, err := s.store.Customer(ctx, tid, contactID, tp.Name, tp.Mode); err != nil || ok {
		return id, err
	}
	id, err := tp.CreateCustomer(ctx, processor.CustomerRequest{
		IdempotencyKey: fmt.Sprintf("customer/%s/%d/%s", tenantID, contactID, tp.Mode),
		Metadata:       map[string]string{"tenant_id": tenantID, "contact_id": strconv.FormatInt(contactID, 10)},
	})
	if err != nil {
		return "", processorError(err, "")
	}
	return s.store.SaveCustomer(ctx, tid, contactID, tp.Name, tp.Mode, id)
}

// charge collects payment i of the order. Its idempotency key is the
// order id and the payment's position, so a retried or replayed order is
// the same charge at the processor.
func (s *Service) charge(ctx context.Context, tp tenantproc.Account, n *store.NewOrder, i int, pd paymentDraft,
	kept map[string]store.PaymentMethod, known map[string]store.KnownMethod, u *undo) (store.Payment, error) {
	pay := pd.Payment
	req := processor.ChargeRequest{
		IdempotencyKey:  fmt.Sprintf("%s/%d", n.ID, i),
		AmountMinor:     pd.AmountMinor,
		Currency:        n.Currency,
		PaymentMethodID: pd.token,
		Description:     fmt.Sprintf("Order %d", n.Number),
		DonorIPAddress:  firstMD(ctx, ratelimit.MetadataKey),
		DonorUserAgent:  firstMD(ctx, UserAgentKey),
		Metadata: map[string]string{"tenant_id": n.TenantID.String(), "order_id": n.ID.String(),
			"order_number": strconv.FormatInt(n.Number, 10), "payment_id": pay.ID.String()},
	}
	if pd.Method == "Ach" {
		req.PaymentMethodType = "us_bank_account"
	}
	// A server relaying the donor's form names the donor's acceptance; the
	// request's own client is then the server, not the donor.
	if pd.mandate != nil {
		req.DonorIPAddress, req.DonorUserAgent = pd.mandate.ipAddress, pd.mandate.userAgent
	}
	// A method attached to the contact's customer is charged with it, and
	// one kept for later is marked so the processor allows later charges.
	// The saved method's row was read before anything was charged
	// (checkMethodOwners), not again here.
	if m, ok := kept[pd.token]; ok {
		req.PaymentMethodID, req.CustomerID, req.SaveForFutureUse = m.ID, m.CustomerID, true
	} else if m, ok := known[pd.token]; ok && m.SavedFor(tp.Name, n.ContactID) {
		req.CustomerID = m.CustomerID
	}
	res, err := tp.Charge(ctx, req)
	if err != nil {
		perr := processorError(err, wire.IndexPath("Payments", i)+".PaymentToken")
		if processor.IsUnavailable(err) {
			return store.Payment{}, &uncertainError{perr}
		}
		return store.Payment{}, perr
	}
	if res.Outcome != processor.Declined {
		ref, outcome := res.Reference, res.Outcome
		u.addCharge(func(ctx context.Context) { s.undoCharge(ctx, tp, ref, outcome, pd.AmountMinor) })
	}
	pay.Processor, pay.ProcessorReference = tp.Name, res.Reference
	switch res.Outcome {
	case processor.Succeeded:
		pay.Status = store.PaymentCaptured
	case processor.Processing:
		pay.Status = store.PaymentPending
	case processor.RequiresAction:
		pay.Status, pay.ClientSecret = store.PaymentRequiresAction, res.ClientSecret
	default:
		msg := res.Message
		if msg == "" {
			msg = "The payment was declined."
		}
		return store.Payment{}, apperr.Rule(wire.CodeDeclined, "The payment was declined by the processor: "+msg)
	}
	return pay, nil
}

// UserAgentKey is the metadata key under which the gateway forwards the
// caller's User-Agent: with the client's address, the record of a donor
// accepting a bank-debit mandate online.
const UserAgentKey = "client-user-agent"

// firstMD is the first value of an incoming metadata key, or "".
func firstMD(ctx context.Context, key string) string {
	if v := metadata.ValueFromIncomingContext(ctx, key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// undoCharge takes back a charge of an order that was not recorded (see
// giveBack). It is logged, not returned: the order's own error is what the
// caller must see.
func (s *Service) undoCharge(ctx context.Context, tp tenantproc.Account, ref string, outcome processor.Outcome, amountMinor int64) {
	if _, err := tenantproc.GiveBack(ctx, tp, ref, outcome, amountMinor); err != nil {
		s.logger.ErrorContext(ctx, "undo charge of an order that was not recorded", "processor_reference", ref, "error", err)
	}
}

// processorError maps a processor failure: a refusal of the request (an
// unknown payment method, say) is a 400 under field, anything else a
// sanitized 503 that is safe to retry with the same idempotency key.
func processorError(err error, field string) error {
	if r, ok := processor.AsRefused(err); ok {
		msg := r.Message
		if msg == "" {
			msg = "The payment processor refused the request."
		}
		return apperr.FieldRule(wire.CodeProcessorRefused, field, msg)
	}
	return apperr.Unavailable("The payment processor cannot be reached; nothing was charged. Retry with the same idempotency key.", err)
}
