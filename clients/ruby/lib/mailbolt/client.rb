# frozen_string_literal: true

require "json"
require "net/http"
require "openssl"
require "securerandom"
require "time"
require "uri"

module Mailbolt
  # The API client. Every argument falls back to the environment:
  # api_key to MAILBOLT_API_KEY, base_url to MAILBOLT_BASE_URL, ca_file to
  # MAILBOLT_CA_FILE (extra trusted roots, PEM, added to the default store).
  #
  #   client = Mailbolt::Client.new
  #   client.messages.send(from: "orders@example.com", to: ["ann@example.net"], subject: "Hi", text: "Hello")
  class Client
    # Error codes that are transient and retried (spec §7). Nothing else is.
    RETRYABLE_CODES = %w[RATE_LIMIT_EXCEEDED SERVICE_UNAVAILABLE GATEWAY_TIMEOUT].freeze
    USER_AGENT = "mailbolt-ruby/#{VERSION}"

    attr_reader :base_url, :max_retries, :last_response

    # max_retries: how many times a transient error is retried (default 3).
    # backoff_base/backoff_max: seconds; the n-th retry waits about
    # backoff_base * 2**n (capped at backoff_max) with full jitter in its upper half,
    # or exactly Retry-After when the answer has one.
    # sleeper: how to wait (a callable taking seconds), for tests.
    def initialize(api_key: nil, base_url: nil, ca_file: nil, max_retries: 3, timeout: 30,
                   open_timeout: 10, backoff_base: 0.5, backoff_max: 30, sleeper: nil, on_retry: nil)
      @api_key = api_key || ENV["MAILBOLT_API_KEY"]
      base = base_url || ENV["MAILBOLT_BASE_URL"]
      raise ConfigurationError, "no base URL: pass base_url: or set MAILBOLT_BASE_URL" if base.nil? || base.empty?

      @base_url = base.sub(%r{/+\z}, "")
      @base_uri = URI(@base_url)
      unless %w[http https].include?(@base_uri.scheme)
        raise ConfigurationError, "base URL must be http:// or https://: #{base.inspect}"
      end

      @ca_file = ca_file || ENV["MAILBOLT_CA_FILE"]
      @ca_file = nil if @ca_file && @ca_file.empty?
      raise ConfigurationError, "CA file not readable: #{@ca_file}" if @ca_file && !File.readable?(@ca_file)

      @max_retries = Integer(max_retries)
      raise ArgumentError, "max_retries must be >= 0" if @max_retries.negative?

      @timeout = timeout
      @open_timeout = open_timeout
      @backoff_base = backoff_base
      @backoff_max = backoff_max
      @sleeper = sleeper || ->(seconds) { sleep(seconds) }
      @on_retry = on_retry
    end

    def messages = @messages ||= Resources::Messages.new(self)
    def events = @events ||= Resources::Events.new(self)
    def api_keys = @api_keys ||= Resources::ApiKeys.new(self)
    def suppressions = @suppressions ||= Resources::Suppressions.new(self)
    def domains = @domains ||= Resources::Domains.new(self)
    def templates = @templates ||= Resources::Templates.new(self)
    def webhooks = @webhooks ||= Resources::Webhooks.new(self)
    def team = @team ||= Resources::Team.new(self)
    def analytics = @analytics ||= Resources::Analytics.new(self)
    def ips = @ips ||= Resources::Ips.new(self)
    def account = @account ||= Resources::Account.new(self)
    def grader = @grader ||= Resources::Grader.new(self)
    def inbound = @inbound ||= Resources::Inbound.new(self)

    def inspect = "#<#{self.class.name} #{@base_url}>"

    # Makes one API call, retrying transient errors. path is below the base URL
    # ("/v1/..."); query is a Hash (nil values dropped); body is a Hash encoded once,
    # so every retry sends the same bytes. Write methods carry an Idempotency-Key:
    # the given one or a fresh UUID, the same across the retries of this call.
    # An answer that is not JSON (a raw message, CSV) is its body as it is.
    def request(method, path, query: nil, body: nil, idempotency_key: nil, auth: true, page: false)
      method = method.to_s.upcase
      write = %w[POST PUT PATCH DELETE].include?(method)
      key = idempotency_key || (write && auth ? SecureRandom.uuid : nil)
      payload = body.nil? ? nil : JSON.generate(body)
      full = path
      q = compact_query(query)
      full += "?#{URI.encode_www_form(q)}" unless q.empty?

      attempt = 0
      loop do
        response = perform(method, full, payload, key, auth)
        return @last_response = wrap(response, page) if response.status < 400

        error = build_error(response)
        @last_response = response
        raise error unless RETRYABLE_CODES.include?(error.code) && attempt < @max_retries

        delay = retry_delay(attempt, error.retry_after)
        @on_retry&.call(attempt + 1, error, delay)
        @sleeper.call(delay)
        attempt += 1
      end
    end

    # The seconds to wait before retry number attempt+1.
    def retry_delay(attempt, retry_after)
      return retry_after if retry_after

      ceiling = [@backoff_base * (2**attempt), @backoff_max].min
      ceiling / 2.0 + rand * ceiling / 2.0
    end

    private

    RawResponse = Struct.new(:status, :headers, :body)

    def compact_query(query)
      return [] if query.nil?

      query.each_with_object([]) do |(k, v), out|
        next if v.nil?

        if v.is_a?(Array)
          v.each { |item| out << [k.to_s, item.to_s] }
        else
          out << [k.to_s, v.is_a?(Time) ? v.utc.iso8601 : v.to_s]
        end
      end
    end

    def perform(method, path, payload, idempotency_key, auth)
      uri = URI("#{@base_url}#{path}")
      req = Net::HTTPGenericRequest.new(method, !payload.nil?, true, uri.request_uri)
      req["User-Agent"] = USER_AGENT
      req["Accept"] = "application/json"
      req["X-API-Key"] = @api_key if auth && @api_key
      req["Idempotency-Key"] = idempotency_key if idempotency_key
      if payload
        req["Content-Type"] = "application/json"
        req.body = payload
      end
      res = http_for(uri).start { |http| http.request(req) }
      headers = {}
      res.each_header { |name, value| headers[name.downcase] = value }
      RawResponse.new(res.code.to_i, headers, res.body)
    rescue SocketError, SystemCallError, IOError, Timeout::Error, OpenSSL::SSL::SSLError, EOFError => e
      raise ConnectionError, "#{method} #{path}: #{e.class}: #{e.message}"
    end

    def http_for(uri)
      http = Net::HTTP.new(uri.host, uri.port)
      http.open_timeout = @open_timeout
      http.read_timeout = @timeout
      http.write_timeout = @timeout if http.respond_to?(:write_timeout=)
      if uri.scheme == "https"
        http.use_ssl = true
        http.min_version = OpenSSL::SSL::TLS1_2_VERSION
        http.verify_mode = OpenSSL::SSL::VERIFY_PEER
        http.cert_store = cert_store
      end
      http
    end

    def cert_store
      @cert_store ||= begin
        store = OpenSSL::X509::Store.new
        store.set_default_paths
        store.add_file(@ca_file) if @ca_file
        store
      end
    end

    def decode(raw)
      return nil if raw.body.nil? || raw.body.empty?
      return raw.body unless raw.headers["content-type"].to_s.include?("json")

      JSON.parse(raw.body)
    rescue JSON::ParserError
      raw.body
    end

    def wrap(raw, page)
      (page ? Page : Response).new(status: raw.status, headers: raw.headers, data: decode(raw))
    end

    def build_error(raw)
      data = decode(raw)
      env = data.is_a?(Hash) && data["error"].is_a?(Hash) ? data["error"] : {}
      code = env["code"]
      message = env["message"] || "HTTP #{raw.status}"
      APIError.class_for(raw.status, code).new(
        status: raw.status, code: code, message: message, details: env["details"],
        request_id: raw.headers["x-request-id"], headers: raw.headers, body: data
      )
    end
  end

  # Retry-After as seconds (integer or HTTP date); nil when absent or unreadable.
  def self.parse_retry_after(value)
    return nil if value.nil? || value.strip.empty?
    return [Integer(value.strip, 10), 0].max if value.strip.match?(/\A\d+\z/)

    [Time.httpdate(value).to_f - Time.now.to_f, 0].max
  rescue ArgumentError
    nil
  end

  # RFC 8288 Link header => {"next" => "/v1/...", ...}.
  def self.parse_link_header(value)
    return {} if value.nil?

    value.scan(/<([^>]*)>\s*((?:;\s*[^;,]+)*)/).each_with_object({}) do |(url, params), out|
      rel = params[/rel\s*=\s*"?([^";,]+)"?/, 1]
      rel&.split&.each { |r| out[r] = url }
    end
  end
end
