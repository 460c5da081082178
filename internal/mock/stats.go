package mock

import (
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// Stats is what a mock upstream has seen since it started or since the last
// ResetStats. Requests to /_mock/ are not counted.
type Stats struct {
	// Requests is the number of API requests received.
	Requests int64 `json:"requests"`
	// InFlight is the number of requests being answered now.
	InFlight int64 `json:"in_flight"`
	// MaxInFlight is the highest InFlight seen.
	MaxInFlight int64 `json:"max_in_flight"`
	// Canceled counts requests whose client went away before the answer
	// was complete (including hung requests and cut streams).
	Canceled int64 `json:"canceled"`
	// ByStatus counts finished requests by the status they answered;
	// a request that never sent headers is not counted here.
	ByStatus map[int]int64 `json:"by_status"`
	// ByEndpoint counts requests by endpoint: "chat/completions",
	// "completions", "embeddings", "responses", "messages", "models",
	// Gemini's "generateContent", "streamGenerateContent", "countTokens",
	// "embedContent" and "batchEmbedContents", Vertex's "count-tokens"
	// (Claude's) and "publisherModel", Bedrock's "converse" and
	// "converse-stream", or "unknown" for paths the mock does not serve.
	ByEndpoint map[string]int64 `json:"by_endpoint"`
	// LastMethod is the HTTP method of the last API request.
	LastMethod string `json:"last_method"`
	// LastPath is the URL path of the last API request, as sent.
	LastPath string `json:"last_path"`
	// LastQuery is the raw query of the last API request (Azure's
	// api-version, for example).
	LastQuery string `json:"last_query"`
	// LastHeaders are the headers of the last API request: tests assert what
	// a gateway sent upstream (Authorization, x-api-key, anthropic-version).
	LastHeaders http.Header `json:"last_headers"`
	// LastBody is the body of the last API request (e.g. to see that a
	// gateway rewrote "model").
	LastBody string `json:"last_body"`
	// Organizations and Projects count API requests by the value of their
	// OpenAI-Organization and OpenAI-Project headers ("" for none; several
	// values joined by ", "): tests assert whose organization and project
	// a gateway sent on every request, not only on the last.
	Organizations map[string]int64 `json:"organizations"`
	Projects      map[string]int64 `json:"projects"`
	// TokensIssued and TokensRefused count the OAuth2 token exchanges
	// (POST /token) answered with an access token, and refused.
	TokensIssued  int64 `json:"tokens_issued"`
	TokensRefused int64 `json:"tokens_refused"`
}

// stats holds the live counters behind Stats.
type stats struct {
	requests    atomic.Int64
	inFlight    atomic.Int64
	maxInFlight atomic.Int64
	canceled    atomic.Int64

	mu            sync.Mutex // guards byStatus, byEndpoint, organizations, projects and last
	byStatus      map[int]int64
	byEndpoint    map[string]int64
	organizations map[string]int64
	projects      map[string]int64
	last          lastRequest
}

type lastRequest struct {
	method, path, query string
	header              http.Header
	body                string
}

func newStats() *stats {
	return &stats{byStatus: map[int]int64{}, byEndpoint: map[string]int64{},
		organizations: map[string]int64{}, projects: map[string]int64{}}
}

// begin counts a request that is starting.
func (st *stats) begin(r *http.Request, ep string, body []byte) {
	st.requests.Add(1)
	n := st.inFlight.Add(1)
	for {
		m := st.maxInFlight.Load()
		if n <= m || st.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	last := lastRequest{
		method: r.Method,
		path:   r.URL.Path,
		query:  r.URL.RawQuery,
		header: r.Header.Clone(),
		body:   string(body),
	}
	org := strings.Join(r.Header.Values("OpenAI-Organization"), ", ")
	project := strings.Join(r.Header.Values("OpenAI-Project"), ", ")
	st.mu.Lock()
	defer st.mu.Unlock()
	st.byEndpoint[ep]++
	st.organizations[org]++
	st.projects[project]++
	st.last = last
}

// end counts a request that has finished with status (0 = none sent).
func (st *stats) end(status int, canceled bool) {
	st.inFlight.Add(-1)
	if canceled {
		st.canceled.Add(1)
	}
	if status == 0 {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.byStatus[status]++
}

func (st *stats) snapshot() Stats {
	out := Stats{
		Requests:    st.requests.Load(),
		InFlight:    st.inFlight.Load(),
		MaxInFlight: st.maxInFlight.Load(),
		Canceled:    st.canceled.Load(),
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	out.ByStatus = maps.Clone(st.byStatus)
	out.ByEndpoint = maps.Clone(st.byEndpoint)
	out.Organizations = maps.Clone(st.organizations)
	out.Projects = maps.Clone(st.projects)
	out.LastMethod = st.last.method
	out.LastPath = st.last.path
	out.LastQuery = st.last.query
	out.LastHeaders = st.last.header.Clone()
	out.LastBody = st.last.body
	return out
}

// reset zeroes the counters; InFlight stays (it is a gauge) and MaxInFlight
// restarts from it.
func (st *stats) reset() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.requests.Store(0)
	st.canceled.Store(0)
	st.maxInFlight.Store(st.inFlight.Load())
	st.byStatus = map[int]int64{}
	st.byEndpoint = map[string]int64{}
	st.organizations = map[string]int64{}
	st.projects = map[string]int64{}
	st.last = lastRequest{}
}

// statusWriter remembers the status a handler answered. It keeps Flush and
// Unwrap so that streaming works through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush sends buffered data to the client.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
