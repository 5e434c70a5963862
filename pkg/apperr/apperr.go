// Package apperr holds the domain errors every service returns and the one
// mapping from them to gRPC status codes.
//
// Handlers return these values (or wrap them); the gRPC interceptor in this
// package turns them into statuses, and anything that is not one of them
// becomes a masked INTERNAL status whose original text stays in the log. The
// gateway turns statuses into problem documents (package problem), so the
// whole chain from a domain error to an HTTP response has exactly two
// mapping points.
package apperr

import (
	"errors"
	"fmt"
	"strings"
)

// Kind classifies a domain error; each kind has one gRPC code.
type Kind int

// The kinds of domain error.
const (
	// KindInternal is anything unexpected. Its text never leaves the process.
	KindInternal Kind = iota
	// KindInvalid is a request that fails validation or a business rule (400).
	KindInvalid
	// KindNotFound is a path-bound resource that does not resolve (404).
	KindNotFound
	// KindUnauthenticated is any authentication failure (401).
	KindUnauthenticated
	// KindPermissionDenied is a missing scope, feature or guard (403).
	KindPermissionDenied
	// KindConflict is a retryable clash with concurrent work (409).
	KindConflict
	// KindUnprocessable is a well-formed request the server refuses on
	// purpose, such as a reused idempotency key with a different body (422).
	KindUnprocessable
	// KindRateLimited is a rejected request under a rate-limit policy (429).
	KindRateLimited
	// KindUnavailable is a dependency that is down; retrying may help (503).
	KindUnavailable
	// KindGone is a position or resource that existed and no longer does,
	// such as an event feed cursor older than the feed's retention (410).
	KindGone
	// KindTooLarge is a request body over the size an endpoint accepts,
	// such as an import file over 1 GiB (413).
	KindTooLarge
)

// Violation is one validation failure: a PascalCase property path (empty for
// a business rule about the whole request) and an English message.
type Violation struct {
	Field   string
	Message string
}

// Error is a domain error.
type Error struct {
	Kind Kind
	// Code is a stable typed code such as "Order.BatchClosed"; optional.
	Code string
	// Message is safe to show to the caller.
	Message string
	// Violations are the field failures of a KindInvalid error.
	Violations []Violation
	// extensions are members the problem document carries beside the
	// standard ones (With).
	extensions map[string]any
	cause      error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	if e.Code != "" {
		b.WriteString(" [" + e.Code + "]")
	}
	for _, v := range e.Violations {
		fmt.Fprintf(&b, "; %s: %s", v.Field, v.Message)
	}
	if e.cause != nil {
		b.WriteString(": " + e.cause.Error())
	}
	return b.String()
}

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// Wrap returns a copy of e that also carries cause (for logs, never for the
// caller).
func (e *Error) Wrap(cause error) *Error {
	c := *e
	c.cause = cause
	return &c
}

// With returns a copy of e that also carries the extension member key
// with value: the problem document the gateway renders has it beside type,
// title and status (RFC 7807 §3.2), as a 404 of a merged contact names its
// survivor with With("mergedInto", id). value must encode to JSON; key must
// not be one of the document's standard members.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.extensions = make(map[string]any, len(e.extensions)+1)
	for k, v := range e.extensions {
		c.extensions[k] = v
	}
	c.extensions[key] = value
	return &c
}

// Extensions returns the members added with With (nil when none).
func (e *Error) Extensions() map[string]any { return e.extensions }

// Invalid returns a validation error with the given violations.
func Invalid(v ...Violation) *Error {
	return &Error{Kind: KindInvalid, Message: "One or more validation errors occurred.", Violations: v}
}

// Rule returns a business-rule failure: one message about the whole request,
// reported under the empty property path with a typed code.
func Rule(code, message string) *Error {
	return &Error{Kind: KindInvalid, Code: code, Message: "One or more validation errors occurred.",
		Violations: []Violation{{Field: "", Message: message}}}
}

// FieldRule returns a business-rule failure about one property, with a code
// (for example Inventory.InsufficientStock under Items[0].Quantity).
func FieldRule(code, field, message string) *Error {
	return &Error{Kind: KindInvalid, Code: code, Message: "One or more validation errors occurred.",
		Violations: []Violation{{Field: field, Message: message}}}
}

// NotFound returns a not-found error naming what did not resolve.
func NotFound(what string) *Error {
	return &Error{Kind: KindNotFound, Message: what + " not found."}
}

// Unauthenticated is the single, generic authentication failure.
func Unauthenticated() *Error {
	return &Error{Kind: KindUnauthenticated, Message: "Unauthorized"}
}

// MissingPermission returns the 403 for a missing scope.
func MissingPermission(scope string) *Error {
	return &Error{Kind: KindPermissionDenied, Message: "Missing required permission: " + scope}
}

// Forbidden returns a 403 for a guard other than a scope (a feature flag,
// impersonation); message names the guard.
func Forbidden(message string) *Error {
	return &Error{Kind: KindPermissionDenied, Message: message}
}

// ForbiddenCode returns a 403 for a guard with a stable typed code
// (Mfa.EnrollmentRequired), which the problem document names as it names
// a 400's.
func ForbiddenCode(code, message string) *Error {
	return &Error{Kind: KindPermissionDenied, Code: code, Message: message}
}

// Conflict returns a retryable conflict.
func Conflict(code, message string) *Error {
	return &Error{Kind: KindConflict, Code: code, Message: message}
}

// Unprocessable returns a 422 refusal with a typed code.
func Unprocessable(code, message string) *Error {
	return &Error{Kind: KindUnprocessable, Code: code, Message: message}
}

// Gone returns a 410 refusal with a typed code (a cursor past retention).
func Gone(code, message string) *Error {
	return &Error{Kind: KindGone, Code: code, Message: message}
}

// TooLarge returns a 413 refusal of a body over the size an endpoint
// accepts, with a typed code.
func TooLarge(code, message string) *Error {
	return &Error{Kind: KindTooLarge, Code: code, Message: message}
}

// CodeRateLimited is the typed code of RateLimited; the gateway renders
// only statuses carrying it as the spec's flat 429 body.
const CodeRateLimited = "RateLimit.Exceeded"

// RateLimited returns the rejection of a request under a rate-limit policy
// (429). Its message is the one the spec's flat 429 body shows.
func RateLimited() *Error {
	return &Error{Kind: KindRateLimited, Code: CodeRateLimited, Message: "Too many requests. Please try again later."}
}

// Unavailable returns a retryable dependency failure.
func Unavailable(message string, cause error) *Error {
	return &Error{Kind: KindUnavailable, Message: message, cause: cause}
}

// As returns the *Error inside err, if any.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// IsKind reports whether err is a domain error of kind k.
func IsKind(err error, k Kind) bool {
	e, ok := As(err)
	return ok && e.Kind == k
}

// Violations collects validation failures while a handler checks a request.
type Violations struct {
	list []Violation
}

// Add records a failure of field.
func (v *Violations) Add(field, format string, args ...any) {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	v.list = append(v.list, Violation{Field: field, Message: msg})
}

// Has reports whether field already failed (to report one message per field).
func (v *Violations) Has(field string) bool {
	for _, x := range v.list {
		if x.Field == field {
			return true
		}
	}
	return false
}

// Err returns the collected failures as an Invalid error, or nil.
func (v *Violations) Err() error {
	if len(v.list) == 0 {
		return nil
	}
	return Invalid(v.list...)
}
