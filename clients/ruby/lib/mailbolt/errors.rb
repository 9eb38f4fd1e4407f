# frozen_string_literal: true

module Mailbolt
  # Base class of every error this library raises.
  class Error < StandardError; end

  # The client is configured wrongly (no base URL, an unreadable CA file, ...).
  class ConfigurationError < Error; end

  # The request did not get an HTTP answer (connection refused, timeout, TLS failure).
  # Not retried: the server may or may not have run the request.
  class ConnectionError < Error; end

  # An error answer of the API, in the envelope {"error": {"code", "message", "details"}}.
  class APIError < Error
    attr_reader :status, :code, :details, :request_id, :headers, :rate_limit, :retry_after, :body

    def initialize(status:, code:, message:, details: nil, request_id: nil, headers: {}, body: nil)
      @status = status
      @code = code
      @details = details || {}
      @request_id = request_id
      @headers = headers
      @body = body
      @rate_limit = RateLimit.from_headers(headers)
      @retry_after = Mailbolt.parse_retry_after(headers["retry-after"])
      super(message.to_s)
    end

    # #message is the server's human-readable message; match on #code, not on it.
    def inspect
      "#<#{self.class.name} #{status} #{code}: #{message}#{request_id ? " (request #{request_id})" : ''}>"
    end

    # The exception class for an answer: by status, with IDEMPOTENCY_CONFLICT
    # getting its own subclass of ConflictError.
    def self.class_for(status, code)
      return IdempotencyConflictError if code == "IDEMPOTENCY_CONFLICT"

      case status
      when 400 then BadRequestError
      when 401 then AuthenticationError
      when 403 then PermissionDeniedError
      when 404 then NotFoundError
      when 408 then RequestTimeoutError
      when 409 then ConflictError
      when 410 then GoneError
      when 413 then PayloadTooLargeError
      when 422 then UnprocessableEntityError
      when 429 then RateLimitError
      when 503 then ServiceUnavailableError
      when 504 then GatewayTimeoutError
      when 500..599 then ServerError
      else APIError
      end
    end
  end

  class BadRequestError < APIError; end          # 400 VALIDATION_ERROR, INVALID_INPUT, INVALID_TEMPLATE
  class AuthenticationError < APIError; end      # 401 UNAUTHORIZED, INVALID_API_KEY, TOKEN_EXPIRED
  class PermissionDeniedError < APIError; end    # 403 FORBIDDEN, INSUFFICIENT_SCOPES
  class NotFoundError < APIError; end            # 404 NOT_FOUND (also another tenant's resource)
  class RequestTimeoutError < APIError; end      # 408
  class ConflictError < APIError; end            # 409 CONFLICT
  class IdempotencyConflictError < ConflictError; end # 409 IDEMPOTENCY_CONFLICT
  class GoneError < APIError; end                # 410 GONE, VERSION_SUNSET
  class PayloadTooLargeError < APIError; end     # 413 BODY_TOO_LARGE
  class UnprocessableEntityError < APIError; end # 422 DOMAIN_NOT_VERIFIED, template render failure
  class RateLimitError < APIError; end           # 429 RATE_LIMIT_EXCEEDED, QUOTA_EXCEEDED
  class ServerError < APIError; end              # 5xx
  class ServiceUnavailableError < ServerError; end # 503
  class GatewayTimeoutError < ServerError; end   # 504

  # A webhook request failed verification. #status is the HTTP status to answer with.
  class WebhookVerificationError < Error
    def status = 401
  end

  # No signature, a malformed one, or no v1 matching any secret: answer 401.
  class InvalidSignatureError < WebhookVerificationError; end

  # The timestamp is more than the tolerance away from the clock: answer 400.
  class StaleSignatureError < WebhookVerificationError
    def status = 400
  end
end
