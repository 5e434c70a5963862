// Package peers is what the orders service asks of the other services:
// contacts (check a contact, save an order's address), inventory (reserve
// and release stock; create an order's shipment, list its ids), auth (a tenant's default currency; its
// settings: time zone and recurring retry days), as interfaces and their gRPC clients, and how their
// failures are answered.
package peers
