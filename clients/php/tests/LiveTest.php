<?php
declare(strict_types=1);

namespace Mailbolt\Tests;

use Mailbolt\Client;
use Mailbolt\Exception\ApiException;
use Mailbolt\Exception\AuthenticationException;
use Mailbolt\Exception\ConflictException;
use Mailbolt\Exception\GoneException;
use Mailbolt\Exception\NotFoundException;
use Mailbolt\Exception\PermissionException;
use Mailbolt\Exception\RateLimitException;
use Mailbolt\Exception\UnprocessableException;
use Mailbolt\Page;

final class LiveTest extends LiveTestCase
{
    public function testSendThenGet(): void
    {
        $c = $this->client();
        $sent = $c->messages->send(self::message());
        $this->assertSame(202, $sent->status);
        $this->assertMatchesRegularExpression('/^[0-9a-f-]{36}$/', $sent['id']);
        $this->assertSame('queued', $sent['status']);
        $this->assertNotEmpty($sent->requestId);
        $this->assertNotEmpty($sent->idempotencyKey, 'a send always carries an Idempotency-Key');
        $this->assertFalse($sent->isReplay());
        $this->assertIsInt($sent->rateLimit->limit);
        $this->assertIsInt($sent->rateLimit->remaining);
        $this->assertIsInt($sent->rateLimit->reset);

        $got = $c->messages->get($sent['id']);
        $this->assertSame($sent['id'], $got['id']);
        $this->assertSame('test', $got['mode']);
        $this->assertSame(['ann@example.net'], $got['to']);
        $this->assertIsInt($got->rateLimit->remaining);
        $this->assertSame($got, $c->lastResponse);
    }

    public function testBatch(): void
    {
        $c = $this->client();
        $batch = $c->messages->sendBatch([self::message('batch one'), self::message('batch two', ['to' => ['bob@example.net']])]);
        $this->assertSame(202, $batch->status);
        $this->assertCount(2, $batch['data']);
        $this->assertSame('batch two', $c->messages->get($batch['data'][1]['id'])['subject']);
        $this->assertSame(['bob@example.net'], $c->messages->get($batch['data'][1]['id'])['to']);
    }

    public function testMessagesListBothModesWalkedToTheEnd(): void
    {
        $c = $this->client();
        $mine = [];
        foreach ($c->messages->sendBatch(array_fill(0, 5, self::message('walk ' . self::unique())))['data'] as $m) {
            $mine[] = $m['id'];
        }
        // Cursor mode: has_more and cursor until the last page.
        $pages = iterator_to_array($c->messages->pages(['limit' => 2]), false);
        $ids = [];
        foreach ($pages as $page) {
            $this->assertInstanceOf(Page::class, $page);
            $ids = array_merge($ids, array_column($page->items(), 'id'));
        }
        $last = end($pages);
        $this->assertFalse($last->hasMore());
        $this->assertNull($last->cursor());
        $this->assertGreaterThanOrEqual(3, count($pages));
        $this->assertSame($ids, array_values(array_unique($ids)), 'no item twice');
        $this->assertEmpty(array_diff($mine, $ids), 'every message of the batch is walked');

        // Page mode: the Link header's rel="next" until the last page; total counts every item.
        $first = $c->messages->list(['limit' => 2, 'page' => 1]);
        $this->assertSame(1, $first->page());
        $this->assertArrayHasKey('last', $first->links());
        $items = iterator_to_array($c->messages->all(['limit' => 2, 'page' => 1]), false);
        $this->assertCount($first->total(), $items);
        $this->assertEqualsCanonicalizing($ids, array_column($items, 'id'));
    }

    public function testSuppressionsListBothModesWalkedToTheEnd(): void
    {
        $c = $this->client('MAILBOLT_API_KEY');
        $tag = self::unique();
        $mine = [];
        for ($i = 0; $i < 5; $i++) {
            $mine[] = "walk$i-$tag@example.org";
            $this->assertContains($c->suppressions->add(['recipient' => $mine[$i], 'reason' => 'manual'])->status, [200, 201]);
        }
        $cursor = array_column(iterator_to_array($c->suppressions->all(['limit' => 2]), false), 'recipient');
        $paged = array_column(iterator_to_array($c->suppressions->all(['limit' => 2, 'page' => 1]), false), 'recipient');
        $this->assertEmpty(array_diff($mine, $cursor));
        $this->assertSame($cursor, $paged, 'both modes walk the same list in the same order');
        $this->assertCount($c->suppressions->list(['limit' => 2, 'page' => 1])->total(), $paged);

        $deleted = $c->suppressions->delete($mine[0]);
        $this->assertSame(204, $deleted->status);
        $this->assertNotContains($mine[0], array_column(iterator_to_array($c->suppressions->all(['limit' => 200]), false), 'recipient'));
    }

    public function testSuppressionsImportAndExport(): void
    {
        $c = $this->client('MAILBOLT_API_KEY');
        $tag = self::unique();
        [$a, $b] = ["imp-a-$tag@example.org", "imp-b-$tag@example.org"];
        $res = $c->suppressions->import([['recipient' => $a], ['recipient' => $b, 'reason' => 'unsubscribe', 'stream' => 'broadcast'], ['recipient' => $a]]);
        $this->assertSame([200, 2, 1], [$res->status, $res['added'], $res['already_present']]);
        try {
            $c->suppressions->import([['recipient' => "imp-c-$tag@example.org"], ['recipient' => 'not an address']]);
            $this->fail('a bad row was accepted');
        } catch (ApiException $e) {
            $this->assertSame([400, 'VALIDATION_ERROR', 1], [$e->status, $e->errorCode, $e->getDetails()['index']]);
        }
        $csv = $c->suppressions->export();
        $this->assertStringStartsWith("recipient,reason,stream\n", $csv);
        $this->assertStringContainsString("$a,manual,\n$b,unsubscribe,broadcast\n", $csv);
        $this->assertStringNotContainsString("imp-c-$tag", $csv);
        $this->assertSame(1, substr_count($c->suppressions->export('broadcast'), $tag));
        $this->assertStringNotContainsString($tag, $this->client('MAILBOLT_OTHER_API_KEY')->suppressions->export());
        // $b's entry is for broadcast only: its transactional entry is not there.
        try {
            $c->suppressions->deleteFromStream($b, 'transactional');
            $this->fail('a transactional entry of a broadcast-only suppression was deleted');
        } catch (NotFoundException $e) {
            $this->assertSame('NOT_FOUND', $e->errorCode);
        }
        $this->assertSame(204, $c->suppressions->deleteFromStream($b, 'broadcast')->status);
        $c->suppressions->delete($a);
    }

    public function testCancelScheduledMessage(): void
    {
        $c = $this->client();
        $sent = $c->messages->send(self::message('later', ['send_at' => gmdate('Y-m-d\TH:i:s\Z', time() + 3600)]));
        $this->assertSame('scheduled', $sent['status']);
        $cancelled = $c->messages->cancel($sent['id']);
        $this->assertSame(200, $cancelled->status);
        $this->assertSame('cancelled', $cancelled['status']);
        try {
            $c->messages->get($sent['id']);
            $this->fail('a cancelled message is gone');
        } catch (GoneException $e) {
            $this->assertSame(410, $e->status);
        }
    }

    public function test401BadKey(): void
    {
        $c = new Client(['api_key' => 'svc_live_' . str_repeat('x', 43)]);
        try {
            $c->account->get();
            $this->fail('no 401');
        } catch (AuthenticationException $e) {
            $this->assertSame(401, $e->status);
            $this->assertSame(401, $e->getCode());
            $this->assertContains($e->errorCode, ['UNAUTHORIZED', 'INVALID_API_KEY']);
            $this->assertNotEmpty($e->getMessage());
            $this->assertNotEmpty($e->requestId);
        }
    }

    public function test403NarrowKey(): void
    {
        $c = $this->client('MAILBOLT_NARROW_API_KEY');
        $this->assertSame(200, $c->account->get()->status, 'account:read is allowed');
        try {
            $c->messages->send(self::message());
            $this->fail('no 403');
        } catch (PermissionException $e) {
            $this->assertSame(403, $e->status);
            $this->assertContains($e->errorCode, ['INSUFFICIENT_SCOPES', 'FORBIDDEN']);
            $this->assertNotEmpty($e->requestId);
        }
        $this->assertSame([], $this->sleeps, 'a 403 is not retried');
    }

    public function test404OtherTenantsMessage(): void
    {
        $id = $this->client('MAILBOLT_API_KEY')->suppressions->add('tenant-' . self::unique() . '@example.org')['recipient'];
        $other = $this->client('MAILBOLT_OTHER_API_KEY');
        $sent = $this->client()->messages->send(self::message());
        try {
            $other->messages->get($sent['id']);
            $this->fail('another tenant saw the message');
        } catch (NotFoundException $e) {
            $this->assertSame(404, $e->status);
            $this->assertSame('NOT_FOUND', $e->errorCode);
        }
        $this->assertNotContains($id, array_column(iterator_to_array($other->suppressions->all()), 'recipient'));
    }

    public function test409IdempotencyKeyReusedWithAnotherBody(): void
    {
        $c = $this->client();
        $key = Client::newIdempotencyKey();
        $c->messages->send(self::message('first'), ['idempotency_key' => $key]);
        try {
            $c->messages->send(self::message('second'), ['idempotency_key' => $key]);
            $this->fail('no 409');
        } catch (ConflictException $e) {
            $this->assertSame(409, $e->status);
            $this->assertSame('IDEMPOTENCY_CONFLICT', $e->errorCode);
        }
        $this->assertSame([], $this->sleeps, 'a 409 is not retried');
    }

    public function test422LiveSendFromUnverifiedDomain(): void
    {
        $c = $this->client('MAILBOLT_API_KEY');
        try {
            $c->messages->send(self::message());
            $this->fail('no 422');
        } catch (UnprocessableException $e) {
            $this->assertSame(422, $e->status);
            $this->assertSame('DOMAIN_NOT_VERIFIED', $e->errorCode);
            $this->assertSame('example.com', $e->details['domain'] ?? null);
            $this->assertIsInt($e->rateLimit->limit, 'rate-limit headers are readable from errors too');
        }
        $this->assertSame([], $this->sleeps, 'a 422 is not retried');
    }

    public function test422TemplateRenderFailure(): void
    {
        $c = $this->client('MAILBOLT_API_KEY');
        $t = $c->templates->create(['name' => 'strict ' . self::unique(), 'subject' => 'Hi {{name}}', 'text' => 'Hello {{name}}']);
        $this->assertSame(201, $t->status);
        $this->assertSame('Hi Ann', $c->templates->render($t['id'], ['data' => ['name' => 'Ann']])['subject']);
        try {
            $c->templates->render($t['id'], ['data' => new \stdClass()]);
            $this->fail('a strict template rendered without its variable');
        } catch (UnprocessableException $e) {
            $this->assertSame(422, $e->status);
            $this->assertNotSame('', $e->errorCode);
        }
    }

    public function test429RetriedThenSucceeds(): void
    {
        // 1 request per second: of a few quick calls, one lands in a used-up second,
        // gets 429 with Retry-After, sleeps and succeeds.
        $c = $this->client('MAILBOLT_LIMITED_API_KEY');
        for ($i = 0; $i < 6 && $this->sleeps === []; $i++) {
            $this->assertSame(200, $c->account->get()->status);
        }
        $this->assertNotEmpty($this->sleeps, 'no call was rate-limited');
        $this->assertGreaterThanOrEqual(1.0, $this->sleeps[0], 'Retry-After (1 s) is honoured');
        $this->assertLessThan(5.0, $this->sleeps[0]);
        $this->assertSame(1, $c->lastResponse->rateLimit->limit);
    }

    public function test429WithoutRetriesIsTyped(): void
    {
        $c = $this->client('MAILBOLT_LIMITED_API_KEY', ['max_retries' => 0]);
        $caught = null;
        for ($i = 0; $i < 6 && $caught === null; $i++) {
            try {
                $c->account->get();
            } catch (RateLimitException $e) {
                $caught = $e;
            }
        }
        $this->assertNotNull($caught, 'no call was rate-limited');
        $this->assertSame(429, $caught->status);
        $this->assertSame('RATE_LIMIT_EXCEEDED', $caught->errorCode);
        $this->assertGreaterThanOrEqual(1.0, $caught->getRetryAfter());
        $this->assertSame(0, $caught->rateLimit->remaining);
        $this->assertSame([], $this->sleeps);
        usleep(1_100_000); // leave the limited key a fresh second
    }

    public function testIdempotentReplay(): void
    {
        $c = $this->client();
        $key = Client::newIdempotencyKey();
        $first = $c->messages->send(self::message('replay'), ['idempotency_key' => $key]);
        $second = $c->messages->send(self::message('replay'), ['idempotency_key' => $key]);
        $this->assertSame($key, $first->idempotencyKey);
        $this->assertFalse($first->isReplay());
        $this->assertTrue($second->isReplay());
        $this->assertSame('true', $second->header('Idempotent-Replayed'));
        $this->assertSame($first['id'], $second['id']);
        // Two sends without a key are two messages.
        $this->assertNotSame($c->messages->send(self::message())['id'], $c->messages->send(self::message())['id']);
    }

    public function testMoreOperations(): void
    {
        $c = $this->client('MAILBOLT_API_KEY');
        $this->assertArrayHasKey('limits', $c->account->get()->toArray());
        $d = $c->domains->create('php-' . self::unique() . '.example.org');
        $this->assertSame(201, $d->status);
        $this->assertSame($d['id'], $c->domains->get($d['id'])['id']);
        $this->assertContains($d['id'], array_column(iterator_to_array($c->domains->all(['limit' => 1])), 'id'));
        $this->assertSame(204, $c->domains->delete($d['id'])->status);

        $k = $c->apiKeys->create(['name' => 'php ' . self::unique(), 'scopes' => ['account:read']]);
        $this->assertStringStartsWith('svc_', $k['key']);
        $this->assertSame($k['id'], $c->apiKeys->get($k['id'])['id']);
        $this->assertContains($k['id'], array_column(iterator_to_array($c->apiKeys->all(['limit' => 2, 'page' => 1])), 'id'));
        $c->apiKeys->revoke($k['id']);
        $done = [];
        foreach ($c->account->auditLog(['limit' => 50])->items() as $e) {
            if ($e['target'] === $k['id']) {
                $done[] = [$e['action'], $e['actor_kind']];
            }
        }
        $this->assertSame([['api_key.revoke', 'api_key'], ['api_key.create', 'api_key']], $done);

        $t = $c->templates->create(['name' => 'v ' . self::unique(), 'subject' => 'S', 'text' => 'one']);
        $c->templates->update($t['id'], ['name' => $t['name'], 'subject' => 'S', 'text' => 'two']);
        $this->assertCount(2, iterator_to_array($c->templates->allVersions($t['id'], ['limit' => 1])));
        $this->assertSame(1, $c->templates->get($t['id'], 1)['version']);

        $this->assertIsArray($c->ips->list()['data']);
        $this->assertIsArray($c->ips->listPools()['data']);
        $this->assertSame(200, $c->analytics->summary()->status);
        $this->assertSame(200, $c->team->list()->status);
        $this->assertSame(200, $c->events->list(['limit' => 5])->status);
    }

    public function testInboundDomainsRoutesAndRaw(): void
    {
        $c = $this->client('MAILBOLT_API_KEY');
        $name = 'in-' . self::unique() . '.example.com';
        $d = $c->inbound->createDomain($name);
        $this->assertSame([201, $name, 'pending'], [$d->status, $d['name'], $d['status']]);
        $this->assertSame(['MX', 'TXT'], array_column($d['records'], 'type'));
        $this->assertSame($name, $c->inbound->getDomain($d['id'])['name']);
        $this->assertContains($d['id'], array_column($c->inbound->listDomains(['limit' => 200])->items(), 'id'));
        $hook = $c->webhooks->create(['url' => 'https://hooks.example.com/' . self::unique(), 'events' => ['message.delivered']]);
        $r = $c->inbound->createRoute($d['id'], 'support', $hook['id']);
        $this->assertSame([201, 'support'], [$r->status, $r['pattern']]);
        $this->assertSame($d['id'], $c->inbound->getRoute($r['id'])['domain_id']);
        $this->assertContains($r['id'], array_column($c->inbound->listRoutes()->items(), 'id'));
        try {
            $c->inbound->createRoute($d['id'], 'support', $hook['id']);
            $this->fail('a second route for the pattern');
        } catch (ConflictException $e) {
            $this->assertSame('CONFLICT', $e->errorCode);
        }
        try {
            $this->client('MAILBOLT_OTHER_API_KEY')->inbound->getDomain($d['id']);
            $this->fail('another tenant saw the inbound domain');
        } catch (NotFoundException $e) {
            $this->assertSame(404, $e->status);
        }
        try {
            $c->inbound->raw('01a21900-0000-7000-8000-000000000000');
            $this->fail('raw of an unknown message');
        } catch (NotFoundException $e) {
            $this->assertSame('NOT_FOUND', $e->errorCode);
        }
        $this->assertSame(204, $c->inbound->deleteRoute($r['id'])->status);
        $this->assertSame(204, $c->inbound->deleteDomain($d['id'])->status);
        $c->webhooks->delete($hook['id']);
    }
}
