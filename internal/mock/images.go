package mock

import (
	"encoding/base64"
	"net/url"
	"strings"
)

// imageMediaTypes are the image types every family takes as data.
var imageMediaTypes = [...]string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// supportedImageType reports whether mt is one of imageMediaTypes.
func supportedImageType(mt string) bool {
	for _, t := range imageMediaTypes {
		if mt == t {
			return true
		}
	}
	return false
}

// decodedSize returns how many bytes base64 data decodes to, or false when
// it is not base64. Standard padded base64 is what OpenAI and Anthropic
// take; lenient also accepts the URL-safe and unpadded forms, as Google's
// JSON mapping of bytes does.
func decodedSize(data string, lenient bool) (int, bool) {
	encs := []*base64.Encoding{base64.StdEncoding}
	if lenient {
		encs = append(encs, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding)
	}
	for _, enc := range encs {
		if b, err := enc.DecodeString(data); err == nil {
			return len(b), true
		}
	}
	return 0, false
}

// parseDataURL splits a "data:<media type>;base64,<data>" URL.
func parseDataURL(u string) (mediaType, data string, ok bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", false
	}
	head, data, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", false
	}
	mediaType, ok = strings.CutSuffix(head, ";base64")
	return mediaType, data, ok
}

// isHTTPURL reports whether u is an absolute http or https URL with a host.
func isHTTPURL(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "http" || p.Scheme == "https") && p.Host != ""
}

// imageProblem is why an image input was refused; "" when it was not.
type imageProblem string

const (
	imageOK          imageProblem = ""
	imageBadType     imageProblem = "media type"
	imageBadBase64   imageProblem = "base64"
	imageBadURL      imageProblem = "url"
	imageUnsupported imageProblem = "unsupported"
)

// dataImage validates an image given as base64 data of mediaType.
func dataImage(mediaType, data string, lenient bool) (image, imageProblem) {
	if !supportedImageType(mediaType) {
		return image{}, imageBadType
	}
	n, ok := decodedSize(data, lenient)
	if !ok {
		return image{}, imageBadBase64
	}
	return image{mediaType: mediaType, size: n}, imageOK
}

// urlImage validates an image given as an OpenAI image_url: a data URL or
// an http(s) address.
func urlImage(u string) (image, imageProblem) {
	if strings.HasPrefix(u, "data:") {
		mt, data, ok := parseDataURL(u)
		if !ok {
			return image{}, imageBadURL
		}
		return dataImage(mt, data, false)
	}
	if !isHTTPURL(u) {
		return image{}, imageBadURL
	}
	return image{source: "url"}, imageOK
}
