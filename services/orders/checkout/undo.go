package checkout

import (
	"context"
	"errors"
)

// undo collects the compensations of side effects taken before an order
// is recorded (a stock reservation, a charge, a saved card), so that a
// failure at any later step undoes them in one place, last first.
type undo struct {
	steps []undoStep
}

type undoStep struct {
	f func(context.Context)
	// charge marks the undo of a processor charge.
	charge bool
}

// add registers the compensation of a step that succeeded.
func (u *undo) add(f func(context.Context)) { u.steps = append(u.steps, undoStep{f: f}) }

// addCharge registers the compensation of a processor charge.
func (u *undo) addCharge(f func(context.Context)) {
	u.steps = append(u.steps, undoStep{f: f, charge: true})
}

// run undoes the registered steps, last first. It runs even when the
// request was cancelled: a charge must not outlive the order it was for.
// With keepCharges, charges are left as they are: the request failed
// while a charge's fate was unknown, and its retry with the same
// idempotency key (the same order id, so the same processor keys) picks
// them up again instead of charging anew.
func (u *undo) run(ctx context.Context, keepCharges bool) {
	ctx = context.WithoutCancel(ctx)
	for i := len(u.steps) - 1; i >= 0; i-- {
		if keepCharges && u.steps[i].charge {
			continue
		}
		u.steps[i].f(ctx)
	}
	u.steps = nil
}

// uncertainError is a failure while a processor charge's outcome is
// unknown (the processor did not answer usefully): the charge may have
// gone through. Its retry must reuse the same order id.
type uncertainError struct {
	err error
}

func (e *uncertainError) Error() string { return e.err.Error() }

// Unwrap returns the problem the caller sees.
func (e *uncertainError) Unwrap() error { return e.err }

// isUncertain reports whether err left a charge's outcome unknown.
func isUncertain(err error) bool {
	var u *uncertainError
	return errors.As(err, &u)
}
