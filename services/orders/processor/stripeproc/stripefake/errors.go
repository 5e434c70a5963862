package stripefake

import (
	"fmt"
	"net/http"
)

// apiErr is Stripe's error object.
type apiErr struct {
	Type          string         `json:"type"`
	Code          string         `json:"code,omitempty"`
	DeclineCode   string         `json:"decline_code,omitempty"`
	Message       string         `json:"message,omitempty"`
	Param         string         `json:"param,omitempty"`
	PaymentIntent map[string]any `json:"payment_intent,omitempty"`
	status        int
}

func invalid(status int, code, param, msg string) *apiErr {
	return &apiErr{Type: "invalid_request_error", Code: code, Param: param, Message: msg, status: status}
}

func missing(param, what, id string) *apiErr {
	status := http.StatusBadRequest
	if param == "id" {
		status = http.StatusNotFound
	}
	return invalid(status, "resource_missing", param, fmt.Sprintf("No such %s: '%s'", what, id))
}

func errorBody(e *apiErr) (int, []byte, bool) {
	return e.status, mustJSON(map[string]any{"error": e}), false
}

func injected(status int) *apiErr {
	switch {
	case status >= 500:
		return &apiErr{Type: "api_error", Message: "An unknown error occurred (injected by stripefake)."}
	case status == http.StatusTooManyRequests:
		return &apiErr{Type: "invalid_request_error", Code: "rate_limit", Message: "Too many requests hit the API too quickly (injected by stripefake)."}
	case status == http.StatusConflict:
		return &apiErr{Type: "idempotency_error", Code: "idempotency_key_in_use", Message: "There is currently another in-progress request using this Idempotent Key (injected by stripefake)."}
	}
	return &apiErr{Type: "invalid_request_error", Message: "Injected by stripefake."}
}
