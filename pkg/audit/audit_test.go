package audit

import "testing"

func TestEventName(t *testing.T) {
	cases := map[[2]string]string{
		{"Contact", Created}:           "contact.created",
		{"OrderPayment", Updated}:      "order_payment.updated",
		{"RecurringDonation", Deleted}: "recurring_donation.deleted",
		{"ApiKey", Created}:            "api_key.created",
	}
	for in, want := range cases {
		if got := EventName(in[0], in[1]); got != want {
			t.Errorf("EventName(%s, %s) = %s, want %s", in[0], in[1], got, want)
		}
	}
}

func TestDiff(t *testing.T) {
	got := Diff(map[string]any{"a": 1, "b": []string{"x"}, "c": "same"}, map[string]any{"a": 2, "b": []string{"x"}, "c": "same"})
	if len(got) != 1 || got["a"].Old != 1 || got["a"].New != 2 {
		t.Errorf("Diff = %v", got)
	}
	if Diff(map[string]any{"a": 1}, map[string]any{"a": 1}) != nil {
		t.Error("no change should be nil")
	}
}
