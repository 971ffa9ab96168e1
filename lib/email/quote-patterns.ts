/*
 * The patterns below are email-reply-parser 2.3.7's (src/regex.ts), under its licence:
 *
 * The MIT License (MIT)
 *
 * Copyright (c) 2021 Crisp IM SAS
 *
 * Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
 * associated documentation files (the "Software"), to deal in the Software without restriction, including
 * without limitation the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
 * copies of the Software, and to permit persons to whom the Software is furnished to do so, subject to the
 * following conditions:
 *
 * The above copyright notice and this permission notice shall be included in all copies or substantial
 * portions of the Software.
 *
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT
 * LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO
 * EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER
 * IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE
 * USE OR OTHER DEALINGS IN THE SOFTWARE.
 */

/**
 * The lines that start quoted history or a signature, as email-reply-parser 2.3.7 wrote them (the notice above):
 * its patterns, in its order. Used by ./quoted-text.ts, which says why the library no longer runs them.
 *
 * Each quote header comes with two necessary conditions, cheap to test (no nested repetition), so that the
 * pattern itself (whose nested `.+` make it polynomial in a line that nearly matches) runs only on text that
 * could match it:
 * - `needles`: a match contains one of them (compared in lower case when `lower`); also how ./quoted-text.ts
 *   finds the lines a broken header can be joined at;
 * - `quick`: every match also matches it: the pattern's head (`On ` at a line's start) and, where it has one, its
 *   tail (`wrote:` at a line's end), with the pattern's own flags so `^` and `$` mean what they mean in it.
 */
export interface QuotePattern {
  regex: RegExp;
  needles: readonly string[];
  lower?: boolean;
  quick?: RegExp;
}

const p = (regex: RegExp, quick: RegExp, ...needles: string[]): QuotePattern => ({ regex, quick, needles });
const i = (regex: RegExp, needle: string): QuotePattern => ({ regex, needles: [needle], lower: true });

/** A quote header: `On DATE, NAME <EMAIL> wrote:` and its kin. */
export const QUOTE_HEADERS: readonly QuotePattern[] = [
  p(/^-*\s*(On\s.+\s.+\n?wrote:{0,1})\s{0,1}-*$/m, /^-*\s*On\s[\s\S]*wrote:?\s?-*$/m, 'wrote'),
  p(/^-*\s*(Le\s.+\s.+\n?écrit\s?:{0,1})\s{0,1}-*$/m, /^-*\s*Le\s[\s\S]*écrit\s?:?\s?-*$/m, 'écrit'),
  p(/^-*\s*(El\s.+\s.+\n?escribió:{0,1})\s{0,1}-*$/m, /^-*\s*El\s[\s\S]*escribió:?\s?-*$/m, 'escribió'),
  p(/^-*\s*(Il\s.+\s.+\n?scritto:{0,1})\s{0,1}-*$/m, /^-*\s*Il\s[\s\S]*scritto:?\s?-*$/m, 'scritto'),
  p(/^-*\s*(Em\s.+\s.+\n?escreveu:{0,1})\s{0,1}-*$/m, /^-*\s*Em\s[\s\S]*escreveu:?\s?-*$/m, 'escreveu'),
  p(/^\s*(Am\s.+\s)\n?\n?schrieb.+\s?(\[|<).+(\]|>):$/m, /^\s*Am\s[\s\S]*[\]>]:$/m, 'schrieb'),
  p(/^\s*(Op\s[\s\S]+?\n?schreef[\s\S]+:)$/m, /^\s*Op\s[\s\S]*:$/m, 'schreef'),
  p(
    /^\s*((W\sdniu|Dnia)\s[\s\S]+?(pisze|napisał(\(a\))?):)$/mu,
    /^\s*(W\sdniu|Dnia)\s[\s\S]*(pisze|napisał(\(a\))?):$/mu,
    'pisze',
    'napisał',
  ),
  p(/^\s*(Den\s.+\s\n?skrev\s.+:)$/m, /^\s*Den\s[\s\S]*:$/m, 'skrev'),
  p(/^\s*(pe\s.+\s.+\n?kirjoitti:)$/m, /^\s*pe\s[\s\S]*kirjoitti:$/m, 'kirjoitti:'),
  p(/^\s*(Am\s.+\sum\s.+\s\n?schrieb\s.+:)$/m, /^\s*Am\s[\s\S]*:$/m, 'schrieb'),
  p(/^\s*(ср,\s.+\n? г\. в\s.+,\s.+[[|<].+[\]|>]:)$/m, /^\s*ср,\s[\s\S]*[\]|>]:$/m, ' г. в'),
  p(/^(在[\s\S]+写道：)$/m, /^在[\s\S]*写道：$/m, '写道：'),
  p(/^(20[0-9]{2}\..+\s작성:)$/m, /^20[0-9]{2}\.[\s\S]*작성:$/m, '작성:'),
  p(/^(20[0-9]{2}\/.+のメッセージ:)$/m, /^20[0-9]{2}\/[\s\S]*のメッセージ:$/m, 'のメッセージ:'),
  p(/^(.+\s<.+>\sschrieb:)$/m, /\sschrieb:$/m, 'schrieb:'),
  p(/^(.+\son.*at.*wrote:)$/m, /wrote:$/m, 'wrote:'),
  p(/^\s*(From\s?:.+\s?\n?\s*[[|<].+[\]|>])/m, /^\s*From\s?:/m, 'From'),
  p(/^\s*(Von\s?:.+\s?\n?\s*[[|<].+[\]|>])/m, /^\s*Von\s?:/m, 'Von'),
  p(/^\s*(De\s?:.+\s?\n?\s*(\[|<).+(\]|>))/m, /^\s*De\s?:/m, 'De'),
  p(/^\s*(Van\s?:.+\s?\n?\s*(\[|<).+(\]|>))/m, /^\s*Van\s?:/m, 'Van'),
  p(/^\s*(Da\s?:.+\s?\n?\s*(\[|<).+(\]|>))/m, /^\s*Da\s?:/m, 'Da'),
  p(/^(20[0-9]{2})-([0-9]{2}).([0-9]{2}).([0-9]{2}):([0-9]{2})\n?(.*)>:$/m, /^20[0-9]{2}-[\s\S]*>:$/m, '>:'),
  p(/^\s*([a-z]{3,4}\.\s[\s\S]+\sskrev\s[\s\S]+:)$/m, /^\s*[a-z]{3,4}\.\s[\s\S]*:$/m, 'skrev'),
  p(
    /^([0-9]{2}).([0-9]{2}).(20[0-9]{2})(.*)(([0-9]{2}).([0-9]{2}))(.*)"( *)<(.*)>( *):$/m,
    /^[0-9]{2}.[0-9]{2}.20[0-9]{2}.*> *:$/m,
    '"',
  ),
  p(/^[0-9]{2}:[0-9]{2}(.*)[0-9]{4}(.*)"( *)<(.*)>( *):$/, /^[0-9]{2}:[0-9]{2}.*> *:$/, '"'),
  p(/^(.*)[0-9]{4}(.*)from(.*)<(.*)>:$/, />:$/, 'from'),
  i(/^-{1,12} ?(O|o)riginal (M|m)essage ?-{1,12}$/i, 'original message'),
  i(/^-{1,12} ?(O|o)prindelig (B|b)esked ?-{1,12}$/i, 'oprindelig besked'),
  i(/^-{1,12} ?(M|m)essage d'origine ?-{1,12}$/i, "message d'origine"),
  i(/^-{1,12} ?(U|u)rsprüngliche (N|n)achricht ?-{0,12}$/i, 'ursprüngliche nachricht'),
];

/** A signature's first line: a separator, `Sent from my iPhone`, `Regards,` and their kin. */
export const SIGNATURES: readonly RegExp[] = [
  /^\s*-{2,4}$/,
  /^\s*_{2,4}$/,
  /^-- $/,
  /^\+{2,4}$/,
  /^={2,4}$/,
  /^________________________________$/,
  /^Sent from (?:\s*.+)$/,
  /^Get Outlook for (?:\s*.+).*/m,
  /^Cheers,?!?$/im,
  /^Best wishes,?!?$/im,
  /^\w{0,20}\s?(\sand\s)?Regards,?!?！?$/im,
  /^Von (?:\s*.+) gesendet$/,
  /^Gesendet von (?:\s*.+) für (?:\s*.+)$/,
  /^Sendt fra (?:\s*.+)$/,
  /^Envoyé depuis (?:\s*.+)$/,
  /^Envoyé de mon (?:\s*.+)$/,
  /^Envoyé à partir de (?:\s*.+)$/,
  /^Télécharger Outlook pour (?:\s*.+).*/m,
  /^Bien . vous,?!?$/im,
  /^\w{0,20}\s?cordialement,?!?$/im,
  /^Bonne (journ.e|soir.e)!?$/im,
  /^Enviado desde (?:\s*.+)$/,
  /^-*\s*(In\sdata\s.+\s.+\n?scritto:{0,1})\s{0,1}-*$/m,
  /^Verzonden vanaf (?:\s*.+)$/,
  /^Verstuurd vanaf (?:\s*.+)$/,
];

/** Whether the text meets both of a pattern's necessary conditions (so may match it). */
export function mayMatch(pattern: QuotePattern, text: string): boolean {
  const seen = pattern.lower ? text.toLowerCase() : text;
  return pattern.needles.some((needle) => seen.includes(needle)) && (pattern.quick?.test(text) ?? true);
}
