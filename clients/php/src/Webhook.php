<?php
declare(strict_types=1);

namespace Mailbolt;

use Mailbolt\Exception\StaleWebhookException;
use Mailbolt\Exception\WebhookException;

/**
 * Verifies the signature of a webhook request (spec §6):
 * HMAC-SHA256 over "<t>.<raw body>", keyed by the Base64-decoded secret,
 * hex-encoded, compared in constant time with every v1 of X-Service-Signature;
 * t must be within the tolerance (300 s) of the clock.
 *
 *     $verifier = new Mailbolt\Webhook();
 *     $verifier->verify(file_get_contents('php://input'), getallheaders(), $secret, $previousSecret);
 */
final class Webhook
{
    public const SIGNATURE_HEADER = 'X-Service-Signature';
    public const TIMESTAMP_HEADER = 'X-Service-Timestamp';
    public const DEFAULT_TOLERANCE = 300;

    /** @var callable(): int */
    private $clock;

    /** @param (callable(): int)|null $clock unix seconds; time() when null */
    public function __construct(?callable $clock = null, private readonly int $tolerance = self::DEFAULT_TOLERANCE)
    {
        if ($tolerance <= 0) {
            throw new \InvalidArgumentException('the tolerance cannot be disabled');
        }
        $this->clock = $clock ?? static fn (): int => time();
    }

    /**
     * Returns normally when the request is authentic and fresh; throws
     * WebhookException (answer 401) or StaleWebhookException (answer 400).
     *
     * @param string $body the raw request body, unparsed
     * @param array<string, string|list<string>> $headers the request's headers, any case
     *        (also $_SERVER's HTTP_X_SERVICE_SIGNATURE form)
     * @param string ...$secrets the webhook secrets (Base64), one or more during a rotation
     */
    public function verify(string $body, array $headers, string ...$secrets): void
    {
        if ($secrets === []) {
            throw new \InvalidArgumentException('at least one webhook secret is needed');
        }
        $signature = self::header($headers, self::SIGNATURE_HEADER);
        if ($signature === null) {
            throw new WebhookException('no ' . self::SIGNATURE_HEADER . ' header');
        }
        $t = null;
        $v1 = [];
        foreach (explode(',', $signature) as $part) {
            $kv = explode('=', trim($part), 2);
            if (count($kv) !== 2) {
                continue;
            }
            if ($kv[0] === 't') {
                $t = $kv[1];
            } elseif ($kv[0] === 'v1') {
                $v1[] = strtolower($kv[1]);
            }
        }
        if ($t === null || preg_match('/^[0-9]{1,18}$/', $t) !== 1 || $v1 === []) {
            throw new WebhookException('the signature header has no valid t or no v1');
        }
        $ts = self::header($headers, self::TIMESTAMP_HEADER);
        if ($ts !== null && trim($ts) !== $t) {
            throw new WebhookException(self::TIMESTAMP_HEADER . ' differs from t of the signature');
        }
        if (abs(($this->clock)() - (int) $t) > $this->tolerance) {
            throw new StaleWebhookException("the signature's timestamp is more than {$this->tolerance} s from the clock");
        }
        $matched = false;
        foreach ($secrets as $secret) {
            $key = base64_decode(trim($secret), true);
            if ($key === false || $key === '') {
                throw new \InvalidArgumentException('a webhook secret is not Base64');
            }
            $expected = hash_hmac('sha256', $t . '.' . $body, $key);
            foreach ($v1 as $candidate) {
                // No early exit: every comparison runs, each in constant time.
                $matched = hash_equals($expected, $candidate) || $matched;
            }
        }
        if (!$matched) {
            throw new WebhookException('the signature does not match');
        }
    }

    /**
     * verify() as a boolean.
     *
     * @param array<string, string|list<string>> $headers
     */
    public function isValid(string $body, array $headers, string ...$secrets): bool
    {
        try {
            $this->verify($body, $headers, ...$secrets);
            return true;
        } catch (WebhookException) {
            return false;
        }
    }

    /** @param array<string, string|list<string>> $headers */
    private static function header(array $headers, string $name): ?string
    {
        $want = strtolower($name);
        $server = 'http_' . str_replace('-', '_', $want);
        foreach ($headers as $k => $v) {
            $k = strtolower((string) $k);
            if ($k === $want || $k === $server) {
                if (is_array($v)) {
                    $v = implode(',', array_map('strval', $v));
                }
                return (string) $v;
            }
        }
        return null;
    }
}
