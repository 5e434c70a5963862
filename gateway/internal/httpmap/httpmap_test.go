package httpmap

import (
	"net/http"
	"testing"
)

func TestSuccessStatus(t *testing.T) {
	for name, want := range map[string]int{
		"CreateOrder": http.StatusCreated, "CreateOrderRefund": http.StatusCreated,
		"DeleteWebhook": http.StatusNoContent, "RevokeApiKey": http.StatusNoContent,
		"UpdateContact": http.StatusOK, "VoidOrder": http.StatusOK, "ListOrders": http.StatusOK,
	} {
		if got := SuccessStatus(name); got != want {
			t.Errorf("SuccessStatus(%s) = %d, want %d", name, got, want)
		}
	}
}
