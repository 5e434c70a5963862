package checkout

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/features"
	"github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/orders/peers"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/tenantproc"
	"github.com/almoner/almoner/services/orders/wire"
)

// idempotencyKey is the body's key, else the Idempotency-Key header.
func idempotencyKey(ctx context.Context, req *ordersv1.CreateOrderRequest) string {
	if k := strings.TrimSpace(req.GetIdempotencyKey()); k != "" {
		return k
	}
	if v := metadata.ValueFromIncomingContext(ctx, "idempotency-key"); len(v) > 0 {
		return strings.TrimSpace(v[0])
	}
	return ""
}

// requestHash is SHA-256 of the request without its key, in proto's
// deterministic encoding: two bodies that mean the same order hash alike
// however their JSON was spelled.
func requestHash(req *ordersv1.CreateOrderRequest) []byte {
	c := proto.Clone(req).(*ordersv1.CreateOrderRequest)
	c.IdempotencyKey = ""
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
	if err != nil {
		panic(err) // a valid message always marshals
	}
	sum := sha256.Sum256(b)
	return sum[:]
}

// CreateOrder records an order. With an idempotency key the request first
// claims the key, so concurrent duplicates cannot both record; a replay
// returns the stored first response without validating, charging or
// reserving again.
func (s *Service) CreateOrder(ctx context.Context, req *ordersv1.CreateOrderRequest) (*ordersv1.CreateOrderResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.OrdersCreate)
	if err != nil {
		return nil, err
	}
	tenantID := p.Tenant()
	key := idempotencyKey(ctx, req)
	if len(key) > maxKey {
		return nil, apperr.Invalid(apperr.Violation{Field: "IdempotencyKey", Message: fmt.Sprintf("'IdempotencyKey' must be %d characters or fewer.", maxKey)})
	}
	orderID := uuid.Must(uuid.NewV7())
	if key == "" {
		o, err := s.createOrder(ctx, p, req, orderID, nil)
		if err != nil {
			return nil, err
		}
		return &ordersv1.CreateOrderResponse{Order: wire.ToOrder(o)}, nil
	}
	hash := requestHash(req)
	claim, err := s.store.ClaimKey(ctx, tenantID, key, hash, orderID, s.idempotencyLease)
	if err != nil {
		return nil, err
	}
	switch {
	case !claim.SameRequest:
		return nil, apperr.Unprocessable(wire.CodeIdempotencyKeyReused,
			"This idempotency key was already used with a different request body; use a new key for a new order.")
	case claim.Completed:
		var resp ordersv1.CreateOrderResponse
		if err := proto.Unmarshal(claim.Response, &resp); err != nil {
			return nil, fmt.Errorf("stored response: %w", err)
		}
		_ = grpc.SetHeader(ctx, metadata.Pairs("idempotent-replayed", "true"))
		return &resp, nil
	case !claim.Owned:
		return nil, apperr.Conflict(wire.CodeIdempotencyInProgress, "An order with this idempotency key is being recorded; retry shortly.")
	}
	var stored []byte
	completion := &store.Completion{Key: key, Render: func(o store.Order) ([]byte, error) {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&ordersv1.CreateOrderResponse{Order: wire.ToOrder(o)})
		stored = b
		return b, err
	}}
	o, err := s.createOrder(ctx, p, req, claim.OrderID, completion)
	if err != nil {
		s.giveBackKey(ctx, tenantID, key, claim.OrderID, err)
		return nil, err
	}
	// Answer with exactly the bytes a replay will return.
	var resp ordersv1.CreateOrderResponse
	if err := proto.Unmarshal(stored, &resp); err != nil {
		return &ordersv1.CreateOrderResponse{Order: wire.ToOrder(o)}, nil
	}
	return &resp, nil
}

// giveBackKey frees a claimed key whose request recorded nothing. After a
// failure that left a charge's outcome unknown, the claim keeps its order
// id and only its lease ends, so the client's retry with the same key
// takes it over at once and charges with the same processor idempotency
// keys (the processor answers the first charge again); when no retry
// comes, the sweeper gives those charges back and frees the key
// (sweeper.go). After any other failure the key goes back, order id and
// all, so a corrected request may use it.
func (s *Service) giveBackKey(ctx context.Context, tenantID uuid.UUID, key string, orderID uuid.UUID, cause error) {
	ctx = context.WithoutCancel(ctx)
	var err error
	if isUncertain(cause) {
		err = s.store.ExpireKey(ctx, tenantID, key, orderID)
	} else {
		err = s.store.ReleaseKey(ctx, tenantID, key, orderID)
	}
	if err != nil {
		s.logger.ErrorContext(ctx, "give back idempotency key", "error", err)
	}
}

// createOrder checks the order, reserves stock, charges processor
// payments and records the order: each a step below. Every side effect
// taken before the order is recorded (a reservation, a charge, a saved
// card) registers its undo; when a later step fails, the undo steps run
// in reverse, in this one place.
func (s *Service) createOrder(ctx context.Context, p authctx.Principal, req *ordersv1.CreateOrderRequest, orderID uuid.UUID,
	completion *store.Completion) (_ store.Order, err error) {
	now := s.now()
	o, d, tp, err := s.prepare(ctx, p, req, orderID, now)
	if err != nil {
		return store.Order{}, err
	}
	var u undo
	defer func() {
		if err != nil {
			// A keyed request whose charge's outcome is unknown keeps its
			// charges for the retry (same key, same order id); anything
			// else undoes everything.
			u.run(ctx, completion != nil && isUncertain(err))
		}
	}()
	if err := s.reserveStock(ctx, p, &o, &u); err != nil {
		return store.Order{}, err
	}
	if err := settleTotals(&o, d); err != nil {
		return store.Order{}, err
	}
	n := store.NewOrder{Order: o, RequestedBatch: d.batchID, Schedules: d.schedules, Idempotency: completion, Now: now}
	if err := s.collect(ctx, p, tp, &n, d, &u); err != nil {
		return store.Order{}, err
	}
	saved, err := s.record(ctx, p, n)
	if err != nil {
		return store.Order{}, err
	}
	// After the commit, never inside it: the request row committed with
	// the order, so a failed handoff only waits for the sweeper.
	s.outbox.Handoff(ctx, saved)
	s.saveAddresses(ctx, p, req, o.ContactID, d)
	return saved, nil
}

// prepare makes every check that can refuse the order before anything is
// reserved or charged: the body, what its payments need, the funds and
// contact, the saved methods' owner, the batch. It returns the order as
// it stands before stock and payments, its draft and the tenant's
// processor.
func (s *Service) prepare(ctx context.Context, p authctx.Principal, req *ordersv1.CreateOrderRequest, orderID uuid.UUID,
	now time.Time) (store.Order, draft, tenantproc.Account, error) {
	currency, err := s.orderCurrency(p, req)
	if err != nil {
		return store.Order{}, draft{}, tenantproc.Account{}, err
	}
	d, err := validateCreate(req, currency, store.Day(now))
	if err != nil {
		return store.Order{}, draft{}, tenantproc.Account{}, err
	}
	tp, err := s.authorizePayments(ctx, p, d)
	if err != nil {
		return store.Order{}, draft{}, tenantproc.Account{}, err
	}
	contactID, err := s.checkReferences(ctx, p, req.GetContactId(), &d)
	if err != nil {
		return store.Order{}, draft{}, tenantproc.Account{}, err
	}
	if d.knownMethods, err = s.checkMethodOwners(ctx, p.Tenant(), contactID, d); err != nil {
		return store.Order{}, draft{}, tenantproc.Account{}, err
	}
	// A batch the order cannot go into is refused before any stock is
	// reserved or card charged, not only when the order is written.
	if d.batchID != nil {
		if err := batchRefusal(s.store.CheckBatch(ctx, p.Tenant(), *d.batchID), d.batchID); err != nil {
			return store.Order{}, draft{}, tenantproc.Account{}, err
		}
	}
	o := store.Order{TenantID: p.Tenant(), ID: orderID, ContactID: contactID, Status: store.StatusCompleted, Currency: currency,
		Billing: d.billing, Shipping: d.shipping, Notes: d.notes, Donations: d.donations, Items: d.items}
	return o, d, tp, nil
}

// saveAddresses saves the order's addresses to the contact when asked: a
// convenience after the fact, so the order is recorded whatever happens
// here.
func (s *Service) saveAddresses(ctx context.Context, p authctx.Principal, req *ordersv1.CreateOrderRequest, contactID int64, d draft) {
	if req.GetSaveBillingToContact() {
		s.saveAddress(ctx, p, contactID, "Billing", d.billing)
	}
	if req.GetSaveShippingToContact() {
		s.saveAddress(ctx, p, contactID, "Shipping", d.shipping)
	}
}

// orderCurrency is the body's currency, else the tenant's default, which
// the principal carries (the gateway asserts it with the key's
// validation).
func (s *Service) orderCurrency(p authctx.Principal, req *ordersv1.CreateOrderRequest) (string, error) {
	if c := strings.ToUpper(strings.TrimSpace(req.GetCurrency())); c != "" {
		return c, nil
	}
	return p.DefaultCurrency()
}

// authorizePayments checks what processor payments need: the tenant's
// feature, the scope to save a method, and a processor to charge them.
// It returns the tenant's processor, or a zero one when the order has no
// processor payment.
func (s *Service) authorizePayments(ctx context.Context, p authctx.Principal, d draft) (tenantproc.Account, error) {
	var needed bool
	for _, pd := range d.payments {
		if !pd.viaProcessor() {
			continue
		}
		needed = true
		if !p.HasFeature(features.PaymentProcessor) {
			return tenantproc.Account{}, apperr.Forbidden("Feature not enabled: " + features.PaymentProcessor)
		}
		if pd.save && !p.HasScope(scopes.PaymentMethodsManage) {
			return tenantproc.Account{}, apperr.MissingPermission(scopes.PaymentMethodsManage)
		}
	}
	if !needed {
		return tenantproc.Account{}, nil
	}
	tp, ok, err := s.processors.ForTenant(ctx, p.TenantID)
	if err != nil {
		return tenantproc.Account{}, err
	}
	if !ok {
		for i, pd := range d.payments {
			if pd.viaProcessor() {
				return tenantproc.Account{}, apperr.FieldRule(wire.CodeProcessorUnavailable, wire.IndexPath("Payments", i)+".PaymentMethod",
					"No payment processor is configured for this tenant; "+pd.Method+" payments cannot be taken.")
			}
		}
	}
	return tp, nil
}

// checkReferences checks that the funds exist and are active (copying
// their names and deductibility onto the lines) and that the contact
// exists and is active, and returns the contact the order is recorded
// under: a merged contact's survivor, so the answer, the processor
// customer and the saved methods' owner are the survivor's. The contact
// check is a gRPC call to contacts, followed for a merged contact by the
// read of its redirect; they run while the funds are read, which takes
// their round trips off the order's latency, and are looked at after the
// funds'.
func (s *Service) checkReferences(ctx context.Context, p authctx.Principal, contactID int64, d *draft) (int64, error) {
	type contactAnswer struct {
		peers.ContactCheck
		survivor int64
		err      error
	}
	tenantID := p.Tenant()
	answer := make(chan contactAnswer, 1)
	go func() {
		a := contactAnswer{survivor: contactID}
		// Only a merged contact's survivor is read: the store's write
		// settles a merge that commits after the check (errContactMoved).
		if a.ContactCheck, a.err = s.contacts.Check(ctx, p, contactID); a.err == nil && a.Merged && a.Active {
			a.survivor, a.err = s.store.ContactSurvivor(ctx, tenantID, contactID)
		}
		answer <- a
	}()
	fundErr := s.checkFunds(ctx, tenantID, d)
	c := <-answer // waited for on every path, so it never outlives the request
	if fundErr != nil {
		return 0, fundErr
	}
	switch {
	case c.err != nil:
		return 0, c.err
	case !c.Exists:
		return 0, apperr.FieldRule(wire.CodeContactNotFound, "ContactId", fmt.Sprintf("Contact %d was not found.", contactID))
	case !c.Active:
		return 0, apperr.FieldRule(wire.CodeContactInactive, "ContactId", fmt.Sprintf("Contact %d is inactive.", contactID))
	}
	return c.survivor, nil
}

// checkFunds reads the order's funds: each must exist and be active;
// deductibility is copied from the fund.
func (s *Service) checkFunds(ctx context.Context, tenantID uuid.UUID, d *draft) error {
	funds, err := s.store.GetFunds(ctx, tenantID, d.fundIDs)
	if err != nil {
		return err
	}
	var v apperr.Violations
	for i := range d.donations {
		f, ok := funds[d.donations[i].FundID]
		path := wire.IndexPath("Donations", i) + ".FundId"
		switch {
		case !ok:
			v.Add(path, "%s", wire.CodeFundNotFound+": Fund '"+d.donations[i].FundID.String()+"' was not found.")
		case !f.IsActive:
			v.Add(path, "%s", wire.CodeFundInactive+": Fund '"+f.Name+"' is inactive.")
		default:
			d.donations[i].FundName, d.donations[i].IsTaxDeductible = f.Name, f.IsTaxDeductible
		}
	}
	for i, sc := range d.schedules {
		if f, ok := funds[sc.FundID]; !ok || !f.IsActive {
			v.Add(wire.IndexPath("RecurringDonations", i)+".FundId", "%s", wire.CodeFundNotFound+": Fund '"+sc.FundID.String()+"' was not found or is inactive.")
		}
	}
	return v.Err()
}

// reserveStock reserves the item lines' stock and copies their prices.
// The reservation is idempotent by (order id, line), so a retry of this
// very order (same claimed id) reuses it; its undo releases it.
func (s *Service) reserveStock(ctx context.Context, p authctx.Principal, o *store.Order, u *undo) error {
	if len(o.Items) == 0 {
		return nil
	}
	rreq := &inventoryv1.ReserveStockRequest{TenantId: p.TenantID, OrderId: o.ID.String()}
	for _, it := range o.Items {
		rreq.Items = append(rreq.Items, &inventoryv1.ReserveStockLine{LineNumber: it.LineNumber, ItemId: it.ItemID.String(), Quantity: it.Quantity})
	}
	resp, err := s.stock.Reserve(ctx, p, rreq)
	if err != nil {
		if verr, ok := peers.ReserveViolation(err); ok {
			return verr
		}
		return peers.Upstream("Stock cannot be reserved right now.", err)
	}
	orderID := o.ID
	u.add(func(ctx context.Context) {
		if err := s.stock.Release(ctx, p, &inventoryv1.ReleaseStockRequest{TenantId: p.TenantID, OrderId: orderID.String()}); err != nil {
			s.logger.ErrorContext(ctx, "release stock of an order that was not recorded", "order_id", orderID, "error", err)
		}
	})
	for i, l := range resp.GetItems() {
		if l.GetCurrency() != o.Currency {
			return apperr.FieldRule(wire.CodeCurrencyMismatch, wire.IndexPath("Items", i)+".ItemId",
				fmt.Sprintf("Item '%s' is priced in %s but the order is in %s.", l.GetSku(), l.GetCurrency(), o.Currency))
		}
		price, err1 := money.ParseMinor(l.GetUnitPrice().GetValue(), o.Currency)
		fmv, err2 := money.ParseMinor(l.GetFairMarketValue().GetValue(), o.Currency)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("inventory returned an unreadable price for line %d", l.GetLineNumber())
		}
		o.Items[i].SKU, o.Items[i].Name, o.Items[i].UnitPriceMinor, o.Items[i].FairMarketValueMinor = l.GetSku(), l.GetName(), price, fmv
	}
	return nil
}

// settleTotals computes the order's totals (the server's, never the
// client's) and checks that the payments add up to them.
func settleTotals(o *store.Order, d draft) error {
	for _, dn := range o.Donations {
		o.DonationSubtotalMinor += dn.AmountMinor
		if dn.IsTaxDeductible {
			o.DeductibleMinor += dn.AmountMinor
		}
	}
	for _, it := range o.Items {
		o.ItemSubtotalMinor += it.UnitPriceMinor * int64(it.Quantity)
		o.DeductibleMinor += max(it.UnitPriceMinor-it.FairMarketValueMinor, 0) * int64(it.Quantity)
	}
	o.TotalMinor = o.DonationSubtotalMinor + o.ItemSubtotalMinor
	var paid int64
	for _, pd := range d.payments {
		paid += pd.AmountMinor
	}
	if paid != o.TotalMinor {
		return apperr.FieldRule(wire.CodePaymentsMismatch, "Payments",
			fmt.Sprintf("The payments add up to %s but the order total is %s.", money.FormatMinor(paid, o.Currency), money.FormatMinor(o.TotalMinor, o.Currency)))
	}
	return nil
}

// record writes the order, its lines, payments, schedules, saved methods
// and audit rows in one transaction.
func (s *Service) record(ctx context.Context, p authctx.Principal, n store.NewOrder) (store.Order, error) {
	for i := range n.Schedules {
		n.Schedules[i].TenantID, n.Schedules[i].ContactID, n.Schedules[i].OriginOrderID = n.TenantID, n.ContactID, n.ID
	}
	saved, err := s.store.CreateOrder(ctx, n, p.Actor())
	return saved, batchRefusal(err, n.RequestedBatch)
}

// batchRefusal maps the store's refusal of an order's batch to its 400;
// other errors pass through.
func batchRefusal(err error, batchID *uuid.UUID) error {
	switch {
	case errors.Is(err, store.ErrBatchClosed):
		return apperr.Rule(wire.CodeBatchClosed, "The batch is closed; orders can no longer be added to it.")
	case errors.Is(err, store.ErrBatchNotFound) && batchID != nil:
		return apperr.FieldRule(wire.CodeBatchNotFound, "BatchId", "Batch '"+batchID.String()+"' was not found.")
	}
	return err
}

func (s *Service) saveAddress(ctx context.Context, p authctx.Principal, contactID int64, kind string, a *store.Address) {
	err := s.contacts.AddAddress(ctx, p, contactID, kind, &contactsv1.AddContactAddressRequest{Line1: a.Line1, Line2: a.Line2, City: a.City,
		StateProvince: a.StateProvince, PostalCode: a.PostalCode, Country: a.Country})
	if err != nil {
		s.logger.WarnContext(ctx, "save order address to contact", "contact_id", contactID, "error", err)
	}
}
