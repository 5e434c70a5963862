package checkout

import (
	"testing"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
)

// TestValidateMandate: the address Stripe keeps as the donor's is a plain
// IPv4 or IPv6 address, an IPv4 one sent as IPv4-mapped IPv6 kept as IPv4;
// one with a zone or a mask, or no address, is refused under IpAddress.
func TestValidateMandate(t *testing.T) {
	for _, tc := range []struct {
		ip, want, field string
	}{
		{"203.0.113.7", "203.0.113.7", ""},
		{" 2001:DB8::1 ", "2001:db8::1", ""},
		{"::ffff:203.0.113.7", "203.0.113.7", ""},
		{"fe80::1%eth0", "", "Payments[0].MandateAcceptance.IpAddress"},
		{"203.0.113.7/24", "", "Payments[0].MandateAcceptance.IpAddress"},
		{"203.0.113", "", "Payments[0].MandateAcceptance.IpAddress"},
		{"", "", "Payments[0].MandateAcceptance.IpAddress"},
	} {
		var v apperr.Violations
		m := validateMandate(&v, "Payments[0].MandateAcceptance", "Ach", &ordersv1.MandateAcceptance{IpAddress: tc.ip, UserAgent: "Mozilla/5.0"})
		switch {
		case tc.field == "" && (v.Err() != nil || m.ipAddress != tc.want):
			t.Errorf("%q: %v, address %q; want %q", tc.ip, v.Err(), m.ipAddress, tc.want)
		case tc.field != "" && !v.Has(tc.field):
			t.Errorf("%q: accepted as %q, want a violation under %s", tc.ip, m.ipAddress, tc.field)
		}
	}
}
