// Package checkout records an order made through the API as named steps:
// validate, authorize the payments, check the contact and funds, reserve
// stock, collect (save methods, charge), record; each step that leaves
// something behind registers its undo, run in one place when a later step
// fails. A keyed request's abandoned charges are given back by the
// sweeper (docs/payments.md).
package checkout
