// Package money converts between the wire's decimal amounts and the integer
// minor units every service stores. There is no floating point anywhere:
// amounts are parsed from and formatted to their decimal text.
package money

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// iso4217 lists the active ISO 4217 currency codes with their minor-unit
// exponent (the number of decimals).
const iso4217 = `AED2 AFN2 ALL2 AMD2 ANG2 AOA2 ARS2 AUD2 AWG2 AZN2 BAM2 BBD2 BDT2 BGN2 BHD3 BIF0 BMD2 BND2 BOB2 BRL2
BSD2 BTN2 BWP2 BYN2 BZD2 CAD2 CDF2 CHF2 CLP0 CNY2 COP2 CRC2 CUP2 CVE2 CZK2 DJF0 DKK2 DOP2 DZD2 EGP2 ERN2 ETB2
EUR2 FJD2 FKP2 GBP2 GEL2 GHS2 GIP2 GMD2 GNF0 GTQ2 GYD2 HKD2 HNL2 HTG2 HUF2 IDR2 ILS2 INR2 IQD3 IRR2 ISK0 JMD2
JOD3 JPY0 KES2 KGS2 KHR2 KMF0 KPW2 KRW0 KWD3 KYD2 KZT2 LAK2 LBP2 LKR2 LRD2 LSL2 LYD3 MAD2 MDL2 MGA2 MKD2 MMK2
MNT2 MOP2 MRU2 MUR2 MVR2 MWK2 MXN2 MYR2 MZN2 NAD2 NGN2 NIO2 NOK2 NPR2 NZD2 OMR3 PAB2 PEN2 PGK2 PHP2 PKR2 PLN2
PYG0 QAR2 RON2 RSD2 RUB2 RWF0 SAR2 SBD2 SCR2 SDG2 SEK2 SGD2 SHP2 SLE2 SOS2 SRD2 SSP2 STN2 SVC2 SYP2 SZL2 THB2
TJS2 TMT2 TND3 TOP2 TRY2 TTD2 TWD2 TZS2 UAH2 UGX0 USD2 UYU2 UZS2 VES2 VND0 VUV0 WST2 XAF0 XCD2 XOF0 XPF0 YER2
ZAR2 ZMW2 ZWG2`

var exponents = func() map[string]int {
	m := map[string]int{}
	for _, f := range strings.Fields(iso4217) {
		m[f[:3]] = int(f[3] - '0')
	}
	return m
}()

// Known reports whether code is an active ISO 4217 currency code.
func Known(code string) bool {
	_, ok := exponents[code]
	return ok
}

// Exponent returns the number of decimals of code (2 when unknown).
func Exponent(code string) int {
	if e, ok := exponents[code]; ok {
		return e
	}
	return 2
}

// Errors of ParseMinor.
var (
	ErrSyntax    = errors.New("not a decimal amount")
	ErrPrecision = errors.New("more decimals than the currency has")
	ErrRange     = errors.New("amount out of range")
)

// ParseMinor converts a decimal literal such as "100.5" to minor units of
// currency (10050 for USD). More decimals than the currency has is an error
// unless they are all zero; nothing is ever rounded.
func ParseMinor(s, currency string) (int64, error) {
	exp := Exponent(currency)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || !digits(whole) || (strings.Contains(s, ".") && (frac == "" || !digits(frac))) {
		return 0, ErrSyntax
	}
	trimmed := strings.TrimRight(frac, "0")
	if len(trimmed) > exp {
		return 0, ErrPrecision
	}
	frac = trimmed + strings.Repeat("0", exp-len(trimmed))
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, ErrRange
	}
	var f int64
	if frac != "" {
		f, _ = strconv.ParseInt(frac, 10, 64)
	}
	scale := int64(math.Pow10(exp))
	if w > (math.MaxInt64-f)/scale {
		return 0, ErrRange
	}
	v := w*scale + f
	if neg {
		v = -v
	}
	return v, nil
}

// FormatMinor writes minor units of currency as a decimal literal with the
// currency's number of decimals: 10050 USD → "100.50", 500 JPY → "500".
func FormatMinor(v int64, currency string) string {
	exp := Exponent(currency)
	neg := v < 0
	u := uint64(v)
	if neg {
		u = uint64(-v)
	}
	s := strconv.FormatUint(u, 10)
	if exp > 0 {
		if len(s) <= exp {
			s = strings.Repeat("0", exp-len(s)+1) + s
		}
		s = s[:len(s)-exp] + "." + s[len(s)-exp:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
