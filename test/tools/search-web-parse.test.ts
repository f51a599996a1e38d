import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { cleanText, decodeEntities } from '../../src/tools/search-web/clean-text.ts';
import { dedupeResults, normaliseUrl } from '../../src/tools/search-web/dedupe.ts';
import { parseRetryAfter } from '../../src/tools/search-web/http-errors.ts';
import {
  decodeResultUrl,
  parseDuckDuckGoHtml,
} from '../../src/tools/search-web/providers/duckduckgo.ts';

const fixture = (name: string): string =>
  readFileSync(new URL(`fixtures/${name}`, import.meta.url), 'utf8');

test('cleanText strips tags, decodes entities and collapses whitespace', () => {
  const cases: [string, string][] = [
    ['Agent <b>Frameworks</b> &amp; Tools', 'Agent Frameworks & Tools'],
    ['  two\n\n  lines\t here ', 'two lines here'],
    ['a<br>b<p>c</p>d', 'a b c d'],
    ['&lt;b&gt; is literal text', '<b> is literal text'],
    ['&#8212; &#x2014; &mdash; &nbsp;x', '— — — x'],
    ['<script>alert(1)</script>safe<style>p{}</style>', 'safe'],
    ['<!-- hidden -->shown', 'shown'],
    ['&unknown; stays', '&unknown; stays'],
    ['<strong>Brave</strong> highlights', 'Brave highlights'],
  ];
  for (const [input, expected] of cases) assert.equal(cleanText(input), expected, input);
});

test('decodeEntities leaves invalid code points alone', () => {
  assert.equal(decodeEntities('&#0;&#xD800;&#1114112;'), '&#0;&#xD800;&#1114112;');
  assert.equal(decodeEntities('&quot;q&quot; &apos;a&#39;'), '"q" \'a\'');
});

test('decodeResultUrl unwraps uddg redirects and drops ads and other schemes', () => {
  const cases: [string, string | undefined][] = [
    [
      '//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Fa%3Fb%3D1%26c%3D2&amp;rut=x',
      'https://example.org/a?b=1&c=2',
    ],
    ['https://duckduckgo.com/l/?uddg=http%3A%2F%2Fexample.com%2F', 'http://example.com/'],
    ['https://duckduckgo.com/y.js?ad_domain=ads.example&amp;u3=abc', undefined],
    ['/html/?q=next', undefined],
    ['//duckduckgo.com/l/?uddg=javascript%3Aalert(1)', undefined],
    ['https://plain.example.net/page', 'https://plain.example.net/page'],
    ['mailto:someone@example.com', undefined],
  ];
  for (const [href, expected] of cases) assert.equal(decodeResultUrl(href), expected, href);
});

test('parseDuckDuckGoHtml reads organic hits in order, skipping the ad', () => {
  const results = parseDuckDuckGoHtml(fixture('duckduckgo-results.html'));
  assert.deepEqual(results, [
    {
      title: 'Agent Frameworks & Tools — An Overview',
      url: 'https://www.example.org/agents?section=intro&lang=en',
      snippet: 'A survey of agent frameworks: planning, tools & memory "in practice".',
    },
    {
      title: 'Guide to building agents',
      url: 'https://docs.example.com/guide/',
      snippet: 'Step by step, with code.',
    },
    {
      title: 'Duplicate of the overview',
      url: 'https://example.org/agents?lang=en&section=intro&utm_source=ddg',
      snippet: 'The same page again.',
    },
    {
      title: 'Plain link result',
      url: 'https://plain.example.net/page',
      snippet: 'Without a redirect wrapper.',
    },
  ]);
  assert.deepEqual(parseDuckDuckGoHtml(fixture('duckduckgo-no-results.html')), []);
});

test('normaliseUrl treats www, trailing slash, fragment, query order and tracking as the same page', () => {
  const same = [
    'https://www.example.org/agents?section=intro&lang=en',
    'http://example.org/agents/?lang=en&section=intro#top',
    'https://EXAMPLE.org/agents?lang=en&utm_source=x&section=intro',
  ];
  const keys = new Set(same.map(normaliseUrl));
  assert.equal(keys.size, 1, [...keys].join(' | '));
  assert.notEqual(normaliseUrl('https://example.org/agents?lang=de'), normaliseUrl(same[0] ?? ''));
  assert.notEqual(
    normaliseUrl('https://example.org/Agents'),
    normaliseUrl('https://example.org/agents'),
  );
});

test('dedupeResults keeps the first hit of each page in order', () => {
  const hit = (url: string, title: string) => ({ url, title, snippet: '' });
  const out = dedupeResults([
    hit('https://a.example/x', '1'),
    hit('https://b.example/', '2'),
    hit('https://www.a.example/x/', '3'),
  ]);
  assert.deepEqual(
    out.map((r) => r.title),
    ['1', '2'],
  );
});

test('parseRetryAfter reads seconds and HTTP dates', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(parseRetryAfter('30', now), 30);
  assert.equal(parseRetryAfter('1.2', now), 2);
  assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now), 60);
  assert.equal(parseRetryAfter(null, now), undefined);
  assert.equal(parseRetryAfter('soon', now), undefined);
});
