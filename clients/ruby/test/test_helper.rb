# frozen_string_literal: true

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "minitest/autorun"
require "json"
require "socket"
require "mailbolt"

module MailboltTest
  VECTOR_PATH = ENV["MAILBOLT_WEBHOOK_VECTOR"] ||
                File.expand_path("../../../testdata/webhooks/signature.json", __dir__)

  def self.vector = @vector ||= JSON.parse(File.read(VECTOR_PATH))

  # Tests against the real server started by clients/harness.sh; skipped without it.
  module Live
    def setup
      skip "MAILBOLT_BASE_URL is not set (run through clients/harness.sh)" if ENV["MAILBOLT_BASE_URL"].to_s.empty?
      super
    end

    def live = @live ||= Mailbolt::Client.new
    def sandbox = @sandbox ||= Mailbolt::Client.new(api_key: ENV.fetch("MAILBOLT_TEST_API_KEY"))
    def unique = "#{Process.pid}-#{SecureRandom.hex(4)}"

    def test_message(**extra)
      { from: "Acme <orders@example.com>", to: ["ann@example.net"], subject: "Order", text: "Thanks!" }.merge(extra)
    end
  end

  # A one-thread HTTP/1.1 server on a loopback port that answers a scripted list
  # of [status, headers, body] and records every request, for tests that need
  # answers the real server gives only by chance (503, 504).
  class FakeServer
    Request = Struct.new(:method, :path, :headers, :body)
    attr_reader :requests

    def initialize(answers)
      @answers = answers.dup
      @requests = Queue.new
      @server = TCPServer.new("127.0.0.1", 0)
      @thread = Thread.new { serve }
    end

    def url = "http://127.0.0.1:#{@server.addr[1]}"

    def recorded
      out = []
      out << @requests.pop until @requests.empty?
      out
    end

    def close
      @server.close
      @thread.join(2)
    end

    private

    def serve
      loop do
        sock = @server.accept
        handle(sock)
      ensure
        sock&.close
      end
    rescue IOError, Errno::EBADF
      nil
    end

    def handle(sock)
      line = sock.gets or return
      method, path, = line.split(" ")
      headers = {}
      while (h = sock.gets) && h != "\r\n"
        k, v = h.split(":", 2)
        headers[k.downcase] = v.strip
      end
      body = headers["content-length"] ? sock.read(headers["content-length"].to_i) : nil
      @requests << Request.new(method, path, headers, body)
      status, extra, payload = @answers.shift || [500, {}, '{"error":{"code":"INTERNAL_ERROR","message":"no answer left"}}']
      payload = payload.to_s
      out = +"HTTP/1.1 #{status} X\r\nConnection: close\r\nContent-Length: #{payload.bytesize}\r\n"
      out << "Content-Type: application/json\r\n" unless payload.empty?
      extra.each { |k, v| out << "#{k}: #{v}\r\n" }
      sock.write(out << "\r\n" << payload)
    end
  end
end
