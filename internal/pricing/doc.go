// Package pricing prices requests (docs/pricing.md): the built-in catalogue
// of list prices, catalogue files of the same shape, each upstream's price
// rules resolved against a catalogue (Prices), and the cost of a request's
// usage at a price (Cost).
//
// The proxy keeps one *Prices per upstream in its catalog and asks it for
// the price of every request's client model (Prices.Lookup, no allocation
// once a model has been seen). Everything else — spend, the request log,
// lowest-cost routing, `switchyard prices` — reaches prices the same way.
package pricing
