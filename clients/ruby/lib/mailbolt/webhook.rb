# frozen_string_literal: true

require "openssl"

module Mailbolt
  # Verification of the signature on webhook requests (spec §6, docs/webhooks.md).
  module Webhook
    SIGNATURE_HEADER = "X-Service-Signature"
    TIMESTAMP_HEADER = "X-Service-Timestamp"
    DEFAULT_TOLERANCE = 300

    module_function

    # Verifies a webhook request. body: the raw request body (a String of the exact
    # bytes, before any JSON parsing). headers: the request's headers (a Hash with any
    # key case, Rack env keys such as HTTP_X_SERVICE_SIGNATURE work too), or the
    # X-Service-Signature value itself. secrets: the webhook's Base64 secret, and the
    # previous one during a rotation. Returns true, or raises InvalidSignatureError
    # (answer 401) or StaleSignatureError (answer 400). now: the clock (Integer unix
    # seconds, Time, or a callable returning either), for tests; tolerance in seconds.
    def verify(body, headers, *secrets, tolerance: DEFAULT_TOLERANCE, now: nil)
      secrets = secrets.flatten.compact
      raise ArgumentError, "no webhook secret given" if secrets.empty?
      raise ArgumentError, "tolerance must be positive (the check is never disabled)" unless tolerance.positive?

      header = headers.is_a?(String) ? headers : header_value(headers, SIGNATURE_HEADER)
      raise InvalidSignatureError, "no #{SIGNATURE_HEADER} header" if header.nil? || header.empty?

      t, sigs = parse(header)
      raise InvalidSignatureError, "malformed #{SIGNATURE_HEADER} header" if t.nil? || sigs.empty?

      unless headers.is_a?(String)
        ts = header_value(headers, TIMESTAMP_HEADER)
        raise InvalidSignatureError, "#{TIMESTAMP_HEADER} differs from t" if ts && !ts.empty? && ts.strip != t
      end

      clock = now.respond_to?(:call) ? now.call : (now || Time.now)
      if (clock.to_i - Integer(t, 10)).abs > tolerance
        raise StaleSignatureError, "timestamp #{t} is more than #{tolerance}s from the clock"
      end

      signed = "#{t}.".b + body.to_s.b
      secrets.each do |secret|
        expected = OpenSSL::HMAC.hexdigest("SHA256", decode_secret(secret), signed)
        return true if sigs.any? { |sig| sig.bytesize == expected.bytesize && secure_compare(expected, sig) }
      end
      raise InvalidSignatureError, "no signature matches"
    end

    # Like verify, but true or false.
    def valid?(body, headers, *secrets, **opts)
      verify(body, headers, *secrets, **opts)
    rescue WebhookVerificationError
      false
    end

    # The X-Service-Signature value for body at time t: what the server sends.
    def sign(body, secret, t)
      "t=#{t.to_i},v1=#{OpenSSL::HMAC.hexdigest('SHA256', decode_secret(secret), "#{t.to_i}.".b + body.to_s.b)}"
    end

    def parse(header)
      t = nil
      sigs = []
      header.split(",").each do |part|
        key, value = part.strip.split("=", 2)
        next if value.nil?

        case key
        when "t"
          return [nil, []] unless value.match?(/\A[0-9]+\z/)

          t = value
        when "v1"
          sigs << value
        end
      end
      [t, sigs]
    end

    def decode_secret(secret)
      secret.to_s.strip.unpack1("m0") # strict Base64
    rescue ArgumentError
      raise ArgumentError, "the webhook secret is not valid Base64"
    end

    def secure_compare(a, b)
      if OpenSSL.respond_to?(:fixed_length_secure_compare)
        OpenSSL.fixed_length_secure_compare(a, b)
      else
        diff = 0
        a.bytes.zip(b.bytes) { |x, y| diff |= x ^ y }
        diff.zero?
      end
    end

    def header_value(headers, name)
      return nil if headers.nil?

      want = name.downcase
      rack = "HTTP_#{name.upcase.tr('-', '_')}"
      headers.each do |k, v|
        key = k.to_s
        return Array(v).first if key.downcase == want || key == rack
      end
      nil
    end
  end
end
