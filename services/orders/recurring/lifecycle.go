package recurring

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/normalize"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/orders/recurring/schedule"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/recurringstore"
	"github.com/almoner/almoner/services/orders/wire"
)

// The lifecycle of a recurring schedule (docs/orders.md, "Schedule
// states"): amend, pause, resume, skip, and its installments.

// AmendRecurringDonation changes the properties the body sends.
func (a *ScheduleServer) AmendRecurringDonation(ctx context.Context, req *ordersv1.AmendRecurringDonationRequest) (*ordersv1.AmendRecurringDonationResponse, error) {
	p, tenant, id, err := scheduleTarget(ctx, req.GetTenantId(), req.GetScheduleId(), scopes.RecurringDonationsManage)
	if err != nil {
		return nil, err
	}
	cur, err := a.s.schedule(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	am, err := a.s.validateAmendment(ctx, cur, req)
	if err != nil {
		return nil, err
	}
	today := store.Day(a.s.now())
	sc, err := a.s.store.UpdateSchedule(ctx, tenant, id, p.Actor(), func(old store.Schedule) (store.Schedule, error) {
		return am.apply(old, today)
	})
	if err != nil {
		return nil, scheduleError(err)
	}
	return &ordersv1.AmendRecurringDonationResponse{RecurringDonation: wire.ToSchedule(sc)}, nil
}

// PauseRecurringDonation pauses an active or past_due schedule, or moves
// a paused one's resume day.
func (a *ScheduleServer) PauseRecurringDonation(ctx context.Context, req *ordersv1.PauseRecurringDonationRequest) (*ordersv1.PauseRecurringDonationResponse, error) {
	p, tenant, id, err := scheduleTarget(ctx, req.GetTenantId(), req.GetScheduleId(), scopes.RecurringDonationsManage)
	if err != nil {
		return nil, err
	}
	today := store.Day(a.s.now())
	var resumeOn *time.Time
	if req.ResumeOn != nil {
		d, ok := parseDay(req.GetResumeOn())
		switch {
		case !ok:
			return nil, apperr.Invalid(apperr.Violation{Field: "ResumeOn", Message: "'ResumeOn' must be a date such as 2026-09-01."})
		case !d.After(today):
			return nil, apperr.Invalid(apperr.Violation{Field: "ResumeOn", Message: "'ResumeOn' must be after today."})
		}
		resumeOn = &d
	}
	sc, err := a.s.store.UpdateSchedule(ctx, tenant, id, p.Actor(), func(sc store.Schedule) (store.Schedule, error) {
		return pause(sc, resumeOn)
	})
	if err != nil {
		return nil, scheduleError(err)
	}
	return &ordersv1.PauseRecurringDonationResponse{RecurringDonation: wire.ToSchedule(sc)}, nil
}

// pause stops charging sc. Its next charge date is, until it resumes,
// the first period boundary on or after resumeOn (the date it will
// charge if nothing else changes), or none without one.
func pause(sc store.Schedule, resumeOn *time.Time) (store.Schedule, error) {
	switch sc.Status {
	case store.ScheduleActive, store.SchedulePastDue, store.SchedulePaused:
	default:
		return sc, apperr.Rule(wire.CodeNotPausable, "A "+sc.Status+" schedule cannot be paused.")
	}
	sc.Status, sc.PausedUntil, sc.NextChargeDate = store.SchedulePaused, resumeOn, nil
	sc.ClearRetry()
	if resumeOn != nil {
		sc.PlaceNext(schedule.Boundary(sc.Anchor(), sc.Frequency, *resumeOn))
		sc.Status = store.SchedulePaused // even when no installment is left before the end date
	}
	return sc, nil
}

// ResumeRecurringDonation resumes a paused schedule at the first period
// boundary on or after today.
func (a *ScheduleServer) ResumeRecurringDonation(ctx context.Context, req *ordersv1.ResumeRecurringDonationRequest) (*ordersv1.ResumeRecurringDonationResponse, error) {
	p, tenant, id, err := scheduleTarget(ctx, req.GetTenantId(), req.GetScheduleId(), scopes.RecurringDonationsManage)
	if err != nil {
		return nil, err
	}
	today := store.Day(a.s.now())
	sc, err := a.s.store.UpdateSchedule(ctx, tenant, id, p.Actor(), func(sc store.Schedule) (store.Schedule, error) {
		switch sc.Status {
		case store.SchedulePaused:
			sc.Resume(today)
			return sc, nil
		case store.ScheduleActive:
			return sc, nil // resuming twice is harmless
		}
		return sc, apperr.Rule(wire.CodeNotResumable, "Only a paused schedule can be resumed; this one is "+sc.Status+".")
	})
	if err != nil {
		return nil, scheduleError(err)
	}
	return &ordersv1.ResumeRecurringDonationResponse{RecurringDonation: wire.ToSchedule(sc)}, nil
}

// SkipRecurringDonationInstallment skips an active schedule's next
// installment.
func (a *ScheduleServer) SkipRecurringDonationInstallment(ctx context.Context, req *ordersv1.SkipRecurringDonationInstallmentRequest) (*ordersv1.SkipRecurringDonationInstallmentResponse, error) {
	p, tenant, id, err := scheduleTarget(ctx, req.GetTenantId(), req.GetScheduleId(), scopes.RecurringDonationsManage)
	if err != nil {
		return nil, err
	}
	today := store.Day(a.s.now())
	sc, err := a.s.store.SkipInstallment(ctx, tenant, id, today, p.Actor(), func(sc store.Schedule) error {
		if sc.Status != store.ScheduleActive || sc.NextChargeDate == nil {
			return apperr.Rule(wire.CodeNotSkippable, "Only an active schedule's next installment can be skipped; this one is "+sc.Status+".")
		}
		return nil
	})
	if err != nil {
		return nil, scheduleError(err)
	}
	return &ordersv1.SkipRecurringDonationInstallmentResponse{RecurringDonation: wire.ToSchedule(sc)}, nil
}

// ListRecurringDonationInstallments returns a page of a schedule's
// installments and attempts, newest first.
func (a *ScheduleServer) ListRecurringDonationInstallments(ctx context.Context, req *ordersv1.ListRecurringDonationInstallmentsRequest) (*ordersv1.ListRecurringDonationInstallmentsResponse, error) {
	_, tenant, id, err := scheduleTarget(ctx, req.GetTenantId(), req.GetScheduleId(), scopes.RecurringDonationsView)
	if err != nil {
		return nil, err
	}
	pg, err := paging.Parse(req.Page, req.PageSize, "", paging.Standard)
	if err != nil {
		return nil, err
	}
	if _, err := a.s.schedule(ctx, tenant, id); err != nil {
		return nil, err
	}
	items, total, err := paging.Offset(pg, func(limit int32, offset int64) ([]recurringstore.Installment, int64, error) {
		return a.s.store.ListInstallments(ctx, tenant, id, limit, offset)
	}, toInstallment)
	if err != nil {
		return nil, err
	}
	return &ordersv1.ListRecurringDonationInstallmentsResponse{Items: items, TotalCount: total, Page: pg.Number, PageSize: pg.Size}, nil
}

// scheduleTarget checks the scope and parses the schedule's path id; an
// id that does not parse is not found.
func scheduleTarget(ctx context.Context, tenantID, scheduleID, scope string) (authctx.Principal, uuid.UUID, uuid.UUID, error) {
	p, err := authctx.Require(ctx, tenantID, scope)
	if err != nil {
		return p, uuid.Nil, uuid.Nil, err
	}
	id, ok := wire.ParseID(scheduleID)
	if !ok {
		return p, uuid.Nil, uuid.Nil, wire.ErrScheduleNotFound
	}
	return p, p.Tenant(), id, nil
}

// schedule reads one of the tenant's schedules; another tenant's is not
// found.
func (s *Service) schedule(ctx context.Context, tenant, id uuid.UUID) (store.Schedule, error) {
	sc, err := s.store.GetSchedule(ctx, tenant, id)
	if err != nil {
		return store.Schedule{}, scheduleError(err)
	}
	return sc, nil
}

// scheduleError maps the store's refusals of a schedule change.
func scheduleError(err error) error {
	switch {
	case errors.Is(err, db.ErrNotFound):
		return wire.ErrScheduleNotFound
	case errors.Is(err, store.ErrChargeInProgress):
		return apperr.Conflict(wire.CodeChargeInProgress, "An installment of this schedule is being charged; retry in a minute.")
	}
	return err
}

// amendment is a PATCH body that passed its checks; nil fields stay.
type amendment struct {
	amountMinor    *int64
	frequency      *string
	nextChargeDate *time.Time
	setEndDate     bool
	endDate        *time.Time
	fundID         *uuid.UUID
	campaignID     *string
	method         *store.PaymentMethod
}

// validateAmendment checks a PATCH body against the schedule as read:
// shapes, the fund (exists, active) and the payment method (saved for the
// schedule's contact, which never changes). What depends on the state
// under the row lock is apply's.
func (s *Service) validateAmendment(ctx context.Context, cur store.Schedule, req *ordersv1.AmendRecurringDonationRequest) (amendment, error) {
	var v apperr.Violations
	var am amendment
	today := store.Day(s.now())
	if req.Amount != nil {
		m := wire.Amount(&v, "Amount", req.GetAmount(), cur.Currency)
		am.amountMinor = &m
	}
	if req.Frequency != nil {
		f := normalize.OneOf(schedule.Frequencies, req.GetFrequency())
		if f == "" {
			v.Add("Frequency", "'Frequency' must be one of weekly, monthly, quarterly, annually.")
		}
		am.frequency = &f
	}
	if req.NextChargeDate != nil {
		d, ok := parseDay(req.GetNextChargeDate())
		switch {
		case !ok:
			v.Add("NextChargeDate", "'NextChargeDate' must be a date such as 2026-09-01.")
		case d.Before(today):
			v.Add("NextChargeDate", "'NextChargeDate' must be today or later.")
		}
		am.nextChargeDate = &d
	}
	if req.EndDate != nil {
		am.setEndDate = true
		switch k := req.GetEndDate().GetKind().(type) {
		case *structpb.Value_NullValue:
		case *structpb.Value_StringValue:
			if d, ok := parseDay(k.StringValue); ok {
				am.endDate = &d
			} else {
				v.Add("EndDate", "'EndDate' must be a date such as 2027-05-01, or null.")
			}
		default:
			v.Add("EndDate", "'EndDate' must be a date such as 2027-05-01, or null.")
		}
	}
	if req.CampaignId != nil {
		c := wire.Text(&v, "CampaignId", req.GetCampaignId(), wire.MaxText, false)
		am.campaignID = &c
	}
	if err := s.amendReferences(ctx, &v, &am, cur, req); err != nil {
		return am, err
	}
	return am, v.Err()
}

// amendReferences checks the fund and the payment method a PATCH names.
func (s *Service) amendReferences(ctx context.Context, v *apperr.Violations, am *amendment, cur store.Schedule, req *ordersv1.AmendRecurringDonationRequest) error {
	if req.FundId != nil {
		fid, err := uuid.Parse(strings.TrimSpace(req.GetFundId()))
		if err != nil {
			v.Add("FundId", "'FundId' must be the id of a fund.")
		} else {
			funds, err := s.store.GetFunds(ctx, cur.TenantID, []uuid.UUID{fid})
			if err != nil {
				return err
			}
			if f, ok := funds[fid]; !ok || !f.IsActive {
				v.Add("FundId", "%s", wire.CodeFundNotFound+": Fund '"+fid.String()+"' was not found or is inactive.")
			}
			am.fundID = &fid
		}
	}
	if req.PaymentMethodId != nil {
		if !store.ViaProcessor(cur.PaymentMethod) {
			v.Add("PaymentMethodId", "A %s schedule keeps its payment method.", cur.PaymentMethod)
			return nil
		}
		m, err := s.store.GetPaymentMethod(ctx, cur.TenantID, strings.TrimSpace(req.GetPaymentMethodId()))
		switch {
		case errors.Is(err, db.ErrNotFound) || (err == nil && m.ContactID != cur.ContactID):
			v.Add("PaymentMethodId", "'PaymentMethodId' must be one of the contact's saved payment methods.")
		case err != nil:
			return err
		default:
			am.method = &m
		}
	}
	return nil
}

// apply makes the amendment to the schedule as locked, as steps: refuse
// what the state forbids, change the timing, the other properties and
// the method, then check the end date. A new frequency counts later
// periods from the next charge date; a new next charge date is the new
// anchor. A new payment method makes a past_due schedule active: the
// missed installment is then charged on the runner's next pass, with an
// attempt number of its own.
func (am amendment) apply(sc store.Schedule, today time.Time) (store.Schedule, error) {
	if err := am.allowed(sc); err != nil {
		return sc, err
	}
	sc = am.applyTiming(sc)
	sc = am.applyProperties(sc)
	sc = am.applyMethod(sc)
	if sc.Status == store.SchedulePaused && sc.PausedUntil != nil {
		sc.PlaceNext(schedule.Boundary(sc.Anchor(), sc.Frequency, *sc.PausedUntil))
		sc.Status = store.SchedulePaused
	}
	return sc, checkEndDate(sc, today)
}

// allowed refuses an amendment of a schedule that has ended, and a new
// next charge date while paused.
func (am amendment) allowed(sc store.Schedule) error {
	if sc.Status == store.ScheduleCancelled || sc.Status == store.ScheduleCompleted {
		return apperr.Rule(wire.CodeNotAmendable, "A "+sc.Status+" schedule cannot be amended.")
	}
	if am.nextChargeDate != nil && sc.Status == store.SchedulePaused {
		return apperr.Invalid(apperr.Violation{Field: "NextChargeDate", Message: "A paused schedule's next charge date is set when it resumes."})
	}
	return nil
}

// applyTiming changes the frequency and the next charge date.
func (am amendment) applyTiming(sc store.Schedule) store.Schedule {
	if am.frequency != nil && *am.frequency != sc.Frequency {
		if sc.NextChargeDate != nil {
			sc.AnchorDate = sc.NextChargeDate
		}
		sc.Frequency = *am.frequency
	}
	if am.nextChargeDate != nil {
		d := *am.nextChargeDate
		sc.AnchorDate, sc.NextChargeDate = &d, &d
		sc.ClearRetry()
	}
	return sc
}

// applyProperties changes the amount, end date, fund and campaign.
func (am amendment) applyProperties(sc store.Schedule) store.Schedule {
	if am.amountMinor != nil {
		sc.AmountMinor = *am.amountMinor
	}
	if am.setEndDate {
		sc.EndDate = am.endDate
	}
	if am.fundID != nil {
		sc.FundID = *am.fundID
	}
	if am.campaignID != nil {
		sc.CampaignID = *am.campaignID
	}
	return sc
}

// applyMethod changes the payment method: the installment that declined
// is tried with the new method on the next pass, not on its retry day.
func (am amendment) applyMethod(sc store.Schedule) store.Schedule {
	if am.method == nil {
		return sc
	}
	sc.PaymentToken, sc.PaymentMethod = am.method.ID, methodOfType(am.method.Type)
	switch {
	case sc.Status == store.SchedulePastDue:
		sc.Status = store.ScheduleActive
		sc.ClearRetry()
	case sc.Status == store.ScheduleActive && sc.FailedAttempts > 0:
		sc.ClearRetry()
	}
	return sc
}

// checkEndDate refuses an end date before today or the next charge date.
func checkEndDate(sc store.Schedule, today time.Time) error {
	switch {
	case sc.EndDate == nil:
		return nil
	case sc.EndDate.Before(today):
		return apperr.Invalid(apperr.Violation{Field: "EndDate", Message: "'EndDate' must be today or later."})
	case sc.NextChargeDate != nil && sc.EndDate.Before(*sc.NextChargeDate):
		return apperr.Invalid(apperr.Violation{Field: "EndDate", Message: "'EndDate' must not be before 'NextChargeDate'."})
	}
	return nil
}

// methodOfType is the schedule's payment method for a saved method's type.
func methodOfType(t string) string {
	if t == "us_bank_account" {
		return "Ach"
	}
	return "Card"
}

// parseDay parses YYYY-MM-DD.
func parseDay(s string) (time.Time, bool) {
	t, err := time.Parse(time.DateOnly, strings.TrimSpace(s))
	return t, err == nil
}

func toInstallment(in recurringstore.Installment) *ordersv1.RecurringDonationInstallment {
	out := &ordersv1.RecurringDonationInstallment{Id: in.ID.String(), Period: in.Period.Format(time.DateOnly), DueDate: in.DueDate.Format(time.DateOnly),
		Status: in.Status, Attempt: in.Attempt, Amount: wire.Decimal(in.AmountMinor, in.Currency), Currency: in.Currency,
		DeclineReason: in.DeclineReason, CreatedAt: timestamppb.New(in.CreatedAt)}
	if in.OrderID != nil {
		out.OrderId = in.OrderID.String()
	}
	return out
}
