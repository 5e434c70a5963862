// Package impersonation serves support access and impersonation sessions
// (docs/operators.md): a tenant's grant, an operator's impersonation of
// one of its users, and the rule that decides on every request whether an
// impersonation still holds. The refused operations are one table in
// pkg/authctx, applied by every service's interceptor.
package impersonation

import (
	"time"
	"unicode/utf8"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/services/auth/store"
)

// Limits of a grant and of an impersonation.
const (
	MaxGrant       = 30 * 24 * time.Hour
	MinReason      = 10
	MaxReason      = 500
	MinMinutes     = 1
	MaxMinutes     = 60
	DefaultMinutes = 30
)

// CodeNotGranted is the typed code of the 403 without a grant in force.
const CodeNotGranted = "Impersonation.NotGranted"

// CodeInProgress is the typed code of the refusal of a second
// impersonation while one is in force.
const CodeInProgress = "Impersonation.InProgress"

// checkStart validates a start: the reason's length and the minutes, which
// default to DefaultMinutes; it returns the minutes.
func checkStart(reason string, minutes *int32) (int32, error) {
	var v apperr.Violations
	if n := utf8.RuneCountInString(reason); n < MinReason || n > MaxReason {
		v.Add("Reason", "'Reason' must be %d to %d characters.", MinReason, MaxReason)
	}
	m := int32(DefaultMinutes)
	if minutes != nil {
		m = *minutes
		if m < MinMinutes || m > MaxMinutes {
			v.Add("Minutes", "'Minutes' must be %d to %d.", MinMinutes, MaxMinutes)
		}
	}
	return m, v.Err()
}

// checkGrant validates a grant's end: in the future, at most MaxGrant
// ahead of now.
func checkGrant(until, now time.Time) error {
	var v apperr.Violations
	switch {
	case until.IsZero():
		v.Add("Until", "'Until' is required.")
	case !until.After(now):
		v.Add("Until", "'Until' must be in the future.")
	case until.Sub(now) > MaxGrant:
		v.Add("Until", "'Until' must be at most 30 days ahead.")
	}
	return v.Err()
}

// EndReason says why the impersonation of a no longer holds at now, or ""
// while it holds: it expired, the tenant's grant was withdrawn or ran
// out, the user is no active member (or the tenant was deactivated), or
// the operator lost the platform role.
func EndReason(a store.ImpersonationAccess, now time.Time) string {
	switch {
	case !now.Before(a.Impersonation.ExpiresAt):
		return store.EndExpired
	case !now.Before(a.GrantUntil):
		return store.EndGrantWithdrawn
	case !a.OperatorActive:
		return store.EndOperatorRemoved
	case !a.Member:
		return store.EndUserDeactivated
	}
	return ""
}

// Until is the end of a's validity as far as time goes: the earliest of
// the session's end, the impersonation's expiry and the grant's end, so a
// gateway never caches the answer past it.
func Until(a store.ImpersonationAccess, sessionEnd time.Time) time.Time {
	end := sessionEnd
	for _, t := range []time.Time{a.Impersonation.ExpiresAt, a.GrantUntil} {
		if t.Before(end) {
			end = t
		}
	}
	return end
}
