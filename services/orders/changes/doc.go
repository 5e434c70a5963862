// Package changes refunds and voids recorded orders. Each change is
// claimed under the order's lock, made at the processor with no
// transaction open, then recorded; a change whose process died or lost
// the processor's answer is finished later with the same keys
// (docs/payments.md, "Refunds and voids").
package changes
