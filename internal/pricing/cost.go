package pricing

import "switchyard/internal/config"

// Usage is a request's tokens. Input counts every prompt token, cached or
// not (OpenAI's convention, as codec.Usage); CacheRead and CacheWrite are
// the parts of Input read from and written to the provider's prompt cache.
type Usage struct {
	Input, Output, CacheRead, CacheWrite int64
}

// Cost returns the USD cost of u at p:
//
//	((Input−CacheRead−CacheWrite)×input + CacheRead×cache_read
//	 + CacheWrite×cache_write + Output×output) / 1e6
//
// Negative counts count as 0, and cached tokens beyond Input are billed as
// cached (the uncached remainder never goes below 0). p is used as given:
// Lookup's prices already carry the input price in an unset cache price
// (config.Price.Effective).
func Cost(u Usage, p config.Price) float64 {
	in, out := max(u.Input, 0), max(u.Output, 0)
	read, write := max(u.CacheRead, 0), max(u.CacheWrite, 0)
	plain := max(in-read-write, 0)
	return (float64(plain)*p.InputPerMTok + float64(read)*p.CacheReadPerMTok +
		float64(write)*p.CacheWritePerMTok + float64(out)*p.OutputPerMTok) / 1e6
}
