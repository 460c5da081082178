package mock

import (
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
)

// vocabulary is what answers are made of; one word is one token.
var vocabulary = [...]string{
	"the", "switch", "yard", "routes", "every", "train", "to", "a", "free", "track",
	"signal", "green", "engine", "carries", "tokens", "across", "many", "lines", "while",
	"operators", "watch", "latency", "and", "errors", "on", "one", "board", "mock",
	"upstream", "answers", "quickly", "with", "steady", "words", "for", "tests", "that",
	"need", "stable", "replies", "gateway", "balances", "load", "over", "accounts",
	"model", "stream", "flows", "event", "by", "when", "limits", "allow", "it", "some",
	"requests", "wait", "others", "retry", "elsewhere", "fast", "slow", "warm", "cold",
}

// hash64 is FNV-1a of parts, separated so that ("ab","c") ≠ ("a","bc").
func hash64(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}

// answerWords returns n words drawn from a RNG seeded by the server seed and
// key (the request's model and prompt), so the same request gets the same
// answer, streamed or not, on every run.
func answerWords(seed int64, key uint64, n int) []string {
	rng := rand.New(rand.NewPCG(uint64(seed), key))
	words := make([]string, n)
	for i := range words {
		words[i] = vocabulary[rng.IntN(len(vocabulary))]
	}
	return words
}

// pieces turns words into stream deltas: every word after the first carries
// its leading space, so the deltas concatenate to the full text.
func pieces(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		if i > 0 {
			w = " " + w
		}
		out[i] = w
	}
	return out
}

// embedding returns a deterministic unit vector of dims dimensions for input.
func embedding(seed int64, input string, dims int) []float64 {
	rng := rand.New(rand.NewPCG(uint64(seed), hash64("embedding", input)))
	v := make([]float64, dims)
	var norm float64
	for i := range v {
		x := float64(float32(rng.Float64()*2 - 1))
		v[i] = x
		norm += x * x
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		return v
	}
	for i := range v {
		v[i] = float64(float32(v[i] / norm))
	}
	return v
}

// embeddingBase64 encodes v as OpenAI's encoding_format "base64" does:
// little-endian float32s, standard base64.
func embeddingBase64(v []float64) string {
	buf := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(x)))
	}
	return base64.StdEncoding.EncodeToString(buf)
}
