// The table's words in English, Arabic and Persian.
//
// Every sentence is one whole message with named placeholders ("{card}", "{count}"), so that a
// translator can order the words as the language needs; the code never glues translated pieces
// together. Counted nouns are plural messages chosen by Intl.PluralRules (Arabic has six forms),
// numbers are written by Intl.NumberFormat (Arabic-Indic digits in Arabic, Persian digits in
// Persian), and lists of cards are joined by Intl.ListFormat.
import { Rank, Suit, type Card } from "../gen/basra/v1/game_pb";

export type Language = "en" | "ar" | "fa";
export const LANGUAGES: readonly Language[] = ["en", "ar", "fa"];

/** A counted message: one text per plural category of the language, "other" always present. */
type Plural = { readonly [category in Intl.LDMLPluralRule]?: string } & { readonly other: string };
type Message = string | Plural;

const en = {
  languageName: "English",
  language: "Language",
  title: "Basra",
  intro: "Play Basra with bots, or invite people with a link for each seat.",
  rulesLabel: "Rules",
  seatsLabel: "Players",
  seatCount: { one: "{count} player", other: "{count} players" },
  seatCountPartners: { one: "{count} player in two partnerships", other: "{count} players in two partnerships" },
  seatChoice: "Seat {seat}",
  byStrong: "Strong bot",
  byGreedy: "Greedy bot",
  byRandom: "Random bot",
  byPerson: "A person, invited by a link",
  rubberOption: "Play a rubber: the first side to win {wins} of {games} games",
  bottomCardOption: "Every seat sees the stock's bottom card",
  gameOfRubber: "Game {game} of the rubber",
  gamesWon: { one: "{count} game won", other: "{count} games won" },
  gameEnded: "Game {game} goes to {who}.",
  youSitFirst: "You sit at seat {seat}.",
  start: "Start the match",
  rulesEram: "Classic, to {target}",
  rulesEgyptian: "Egyptian, to {target}",
  rulesJordanian: "Jordanian: basras worth double the card",
  rulesLobashev: "Six-card deals (Lobashev)",
  rulesPersian: "Persian, each for themself",
  rulesPersianPartnership: "Persian, with a partner",
  botNote: "The server plays the bots, each seeing only its own cards: the random bot plays any card, the greedy bot takes the most it can at once, the strong bot weighs every play against the cards it cannot see.",
  inviteLabel: "Send this link to the player of seat {seat}: it seats them at your table. Whoever has it plays that seat's cards.",
  watchLabel: "Spectator link: whoever opens it watches the table live and sees nobody's hand.",
  copyLink: "Copy the link",
  linkCopied: "Link copied",
  linkSelected: "This browser cannot copy here: the link is selected, copy it yourself (Ctrl+C, or press and hold, then Copy).",
  leave: "Leave the table",
  watching: "You are watching this match: nobody's hand is shown here.",
  you: "You",
  seatBotStrong: "Strong bot (seat {seat})",
  seatBotGreedy: "Greedy bot (seat {seat})",
  seatBotRandom: "Random bot (seat {seat})",
  seatPlayer: "Player (seat {seat})",
  dealer: "Dealer",
  bottomCard: "Bottom card of the stock",
  handAndDeal: "Hand {hand}, deal {deal} of {deals}",
  stock: { one: "{count} card in the stock", other: "{count} cards in the stock" },
  cardsHeld: { one: "{count} card in hand", other: "{count} cards in hand" },
  captured: { one: "{count} card captured", other: "{count} cards captured" },
  yourTurn: "Your turn: choose a card.",
  turnOf: "Waiting for {who} to play.",
  floor: "Floor",
  emptyFloor: "The floor is empty.",
  yourHand: "Your hand",
  scores: "Scores",
  points: { one: "{count} point", other: "{count} points" },
  carry: "Carried over from tied hands: {carry} points, added to the next majority scored",
  target: "First to {target} wins",
  choosePlan: "What should {card} take?",
  plan: "Take {cards}",
  planBasra: "Take {cards}: basra!",
  planSweep: "Sweep the floor: {cards}",
  cancel: "Choose another card",
  planPoints: { one: "+{count} point", other: "+{count} points" },
  basra: "Basra!",
  basraBy: "Basra for {who}!",
  basraYou: "Your basra!",
  basraCount: { one: "{count} basra", other: "{count} basras" },
  pile: { one: "{count} card taken", other: "{count} cards taken" },
  partner: "Partner",
  toPlay: "To play",
  lastPlay: "Last play",
  canTake: "can capture",
  handOverMoment: "Hand {hand} is over",
  howToPlay: "How to play",
  thisMatch: "This match: {name}.",
  leaveQuestion: "Leave this table? This tab forgets your seat: you can come back only with an invitation link.",
  leaveYes: "Leave",
  leaveNo: "Stay at the table",
  specialRank: { one: "each {rank} {count} point", other: "each {rank} {count} points" },
  specialCard: { one: "{card} {count} point", other: "{card} {count} points" },
  sheetCarryNote: "Carry: the majority points a tie left unscored, won by the next side to score the majority.",
  sheetSpecialsNote: "Special cards score on their own: {cards}.",
  youTrailed: "You laid {card} on the floor.",
  youTook: "You took {cards} with {card}.",
  youBasra: "Basra! You took {cards} with {card}.",
  seatTrailed: "{who} laid {card} on the floor.",
  seatTook: "{who} took {cards} with {card}.",
  seatBasra: "Basra for {who}: {cards} taken with {card}.",
  handStarted: "Hand {hand} is dealt.",
  cardsDealt: { one: "{count} new card each.", other: "{count} new cards each." },
  youCollect: "You take what is left on the floor.",
  seatCollects: "{who} takes what is left on the floor.",
  nobodyCollects: "Nobody captured in this hand: what is left on the floor goes to no one.",
  handScored: "Hand {hand} is scored.",
  log: "What happened",
  sheet: "Score sheet of hand {hand}",
  sheetCards: "Cards",
  sheetMajority: { one: "Majority ({count} card or more)", other: "Majority ({count} cards or more)" },
  sheetMajorityMost: "Majority (the most cards)",
  sheetCarry: "Carry",
  sheetSpecials: "Special cards",
  sheetBasras: "Basras",
  sheetBasraPoints: "Basra points",
  sheetHand: "Hand total",
  sheetMatch: "Match total",
  nextHand: "Deal the next hand",
  goOn: "Go on to hand {hand}",
  extraHand: "Equal highest totals at the target: another hand decides.",
  youWon: "You won the match.",
  yourSideWon: "Your side won the match.",
  seatWon: "{who} won the match.",
  newMatch: "New match",
  reconnecting: "Connection lost: the table waits until the server is back…",
  card: "{rank} of {suit}",
  rank1: "ace",
  rank2: "two",
  rank3: "three",
  rank4: "four",
  rank5: "five",
  rank6: "six",
  rank7: "seven",
  rank8: "eight",
  rank9: "nine",
  rank10: "ten",
  rank11: "jack",
  rank12: "queen",
  rank13: "king",
  suitC: "clubs",
  suitD: "diamonds",
  suitH: "hearts",
  suitS: "spades",
  // Errors, by the ErrorInfo reason the service sends (proto/basra/v1/errors.proto).
  NOT_YOUR_TURN: "It is not your turn.",
  CARD_NOT_IN_HAND: "That card is not in your hand any more.",
  PLAN_REQUIRED: "That card can capture in several ways: choose one.",
  UNKNOWN_PLAN: "That capture is no longer possible: choose again.",
  CAPTURE_REQUIRED: "That card can capture, so it cannot be laid on the floor.",
  HAND_IN_PROGRESS: "The hand is still being played.",
  HAND_OVER: "The hand is over: deal the next one.",
  MATCH_OVER: "The match is over.",
  VERSION_MISMATCH: "The table changed meanwhile: look again and choose.",
  MATCH_NOT_FOUND: "This match does not exist any more.",
  TOKEN_MISSING: "This seat's key is missing: open your invitation link again.",
  TOKEN_INVALID: "This seat's key does not belong to the match.",
  API_KEY_MISSING: "This server only lets its own apps create matches.",
  API_KEY_INVALID: "This server only lets its own apps create matches.",
  RATE_LIMITED: { one: "Too many new matches: try again in {count} second.", other: "Too many new matches: try again in {count} seconds." },
  STORE_UNAVAILABLE: "The server cannot reach its storage: try again soon.",
  HISTORY_TRIMMED: "Part of the match history is gone: the table was reloaded.",
  INTERNAL: "The server had a fault: try again.",
  unreachable: "The server cannot be reached: try again soon.",
  unknownError: "Something went wrong: {detail}",
} satisfies Record<string, Message>;

export type MessageId = keyof typeof en;
type Catalog = Record<MessageId, Message>;

// Egyptian and Levantine players' names for the cards: آص، ولد، بنت، شايب؛ سباتي، ديناري، كبة، بستوني.
const ar: Catalog = {
  languageName: "العربية",
  language: "اللغة",
  title: "باصرة",
  intro: "العب باصرة مع الكمبيوتر، أو ادعُ أصحابك برابط لكل مقعد.",
  rulesLabel: "القواعد",
  seatsLabel: "اللاعبون",
  seatCount: {
    zero: "لا لاعبين",
    one: "لاعب واحد",
    two: "لاعبان",
    few: "{count} لاعبين",
    many: "{count} لاعبًا",
    other: "{count} لاعب",
  },
  seatCountPartners: {
    zero: "لا لاعبين",
    one: "لاعب واحد",
    two: "لاعبان",
    few: "{count} لاعبين في فريقين",
    many: "{count} لاعبًا في فريقين",
    other: "{count} لاعب في فريقين",
  },
  seatChoice: "المقعد {seat}",
  byStrong: "كمبيوتر قوي",
  byGreedy: "كمبيوتر طمّاع",
  byRandom: "كمبيوتر عشوائي",
  byPerson: "شخص تدعوه برابط",
  rubberOption: "العب روبر: يفوز أول فريق يكسب {wins} أشواط من {games}",
  bottomCardOption: "يرى كل اللاعبين آخر ورقة في الرزمة",
  gameOfRubber: "الشوط {game} من الروبر",
  gamesWon: {
    zero: "لا أشواط مكسوبة",
    one: "شوط واحد مكسوب",
    two: "شوطان مكسوبان",
    few: "{count} أشواط مكسوبة",
    many: "{count} شوطًا مكسوبًا",
    other: "{count} شوط مكسوب",
  },
  gameEnded: "الشوط {game} لـ{who}.",
  youSitFirst: "أنت في المقعد {seat}.",
  start: "ابدأ المباراة",
  rulesEram: "كلاسيكية، إلى {target}",
  rulesEgyptian: "مصرية",
  rulesJordanian: "أردنية: الباصرة بضعف الورقة",
  rulesLobashev: "توزيع ست أوراق (لوباشيف)",
  rulesPersian: "إيرانية، كل لاعب لنفسه",
  rulesPersianPartnership: "إيرانية، مع شريك",
  botNote: "الخادم يلعب عن الكمبيوتر، ولا يرى كل كمبيوتر إلا ورقه: العشوائي يلعب أي ورقة، والطمّاع يأكل أكثر ما يقدر عليه في الحال، والقوي يزن كل لعبة مقابل الورق الذي لا يراه.",
  inviteLabel: "أرسل هذا الرابط إلى لاعب المقعد {seat} ليجلس إلى طاولتك. من يملك الرابط يلعب بورق هذا المقعد.",
  watchLabel: "رابط المشاهدة: من يفتحه يتابع الطاولة مباشرة ولا يرى ورق أحد.",
  copyLink: "انسخ الرابط",
  linkCopied: "تم نسخ الرابط",
  linkSelected: "لا يستطيع المتصفح النسخ هنا: الرابط محدَّد، انسخه بنفسك (Ctrl+C، أو اضغط مطولًا ثم اختر نسخ).",
  leave: "غادر الطاولة",
  watching: "أنت تشاهد هذه المباراة: لا يظهر هنا ورق أحد.",
  you: "أنت",
  seatBotStrong: "كمبيوتر قوي (المقعد {seat})",
  seatBotGreedy: "كمبيوتر طمّاع (المقعد {seat})",
  seatBotRandom: "كمبيوتر عشوائي (المقعد {seat})",
  seatPlayer: "لاعب (المقعد {seat})",
  dealer: "الموزّع",
  bottomCard: "آخر ورقة في الرزمة",
  handAndDeal: "اليد {hand}، التوزيعة {deal} من {deals}",
  stock: {
    zero: "لا ورق في الرزمة",
    one: "ورقة واحدة في الرزمة",
    two: "ورقتان في الرزمة",
    few: "{count} أوراق في الرزمة",
    many: "{count} ورقة في الرزمة",
    other: "{count} ورقة في الرزمة",
  },
  cardsHeld: {
    zero: "لا ورق في اليد",
    one: "ورقة واحدة في اليد",
    two: "ورقتان في اليد",
    few: "{count} أوراق في اليد",
    many: "{count} ورقة في اليد",
    other: "{count} ورقة في اليد",
  },
  captured: {
    zero: "الكومة فاضية",
    one: "ورقة واحدة في الكومة",
    two: "ورقتان في الكومة",
    few: "{count} أوراق في الكومة",
    many: "{count} ورقة في الكومة",
    other: "{count} ورقة في الكومة",
  },
  yourTurn: "دورك: اختر ورقة.",
  turnOf: "الدور على {who}.",
  floor: "الأرض",
  emptyFloor: "الأرض فاضية.",
  yourHand: "ورقك",
  scores: "النتيجة",
  points: {
    zero: "لا نقاط",
    one: "نقطة واحدة",
    two: "نقطتان",
    few: "{count} نقاط",
    many: "{count} نقطة",
    other: "{count} نقطة",
  },
  carry: "المرحَّل من الأيدي المتعادلة: {carry} نقطة تُضاف إلى الأغلبية التالية",
  target: "يفوز أول من يبلغ {target}",
  choosePlan: "ماذا تأكل {card}؟",
  plan: "كُل {cards}",
  planBasra: "كُل {cards}: باصرة!",
  planSweep: "اكنس الأرض: {cards}",
  cancel: "اختر ورقة أخرى",
  planPoints: { zero: "+{count} نقطة", one: "+{count} نقطة", two: "+{count} نقطة", few: "+{count} نقاط", many: "+{count} نقطة", other: "+{count} نقطة" },
  basra: "باصرة!",
  basraBy: "باصرة لـ{who}!",
  basraYou: "باصرة لك!",
  basraCount: { zero: "لا باصرة", one: "باصرة واحدة", two: "باصرتان", few: "{count} باصرات", many: "{count} باصرة", other: "{count} باصرة" },
  pile: { zero: "الكومة فاضية", one: "ورقة في الكومة", two: "ورقتان في الكومة", few: "{count} أوراق في الكومة", many: "{count} ورقة في الكومة", other: "{count} ورقة في الكومة" },
  partner: "شريكك",
  toPlay: "دوره",
  lastPlay: "آخر لعبة",
  canTake: "تأكل",
  handOverMoment: "انتهت اليد {hand}",
  howToPlay: "طريقة اللعب",
  thisMatch: "هذه المباراة: {name}.",
  leaveQuestion: "هل تغادر الطاولة؟ ستنسى هذه الصفحة مقعدك: لن تعود إليه إلا برابط دعوة.",
  leaveYes: "غادر",
  leaveNo: "ابقَ على الطاولة",
  specialRank: { zero: "كل {rank} بـ{count} نقطة", one: "كل {rank} بنقطة", two: "كل {rank} بنقطتين", few: "كل {rank} بـ{count} نقاط", many: "كل {rank} بـ{count} نقطة", other: "كل {rank} بـ{count} نقطة" },
  specialCard: { zero: "{card} بـ{count} نقطة", one: "{card} بنقطة", two: "{card} بنقطتين", few: "{card} بـ{count} نقاط", many: "{card} بـ{count} نقطة", other: "{card} بـ{count} نقطة" },
  sheetCarryNote: "المرحَّل: نقاط الأغلبية التي لم تُحسب بسبب التعادل، يكسبها أول فريق يحصل على الأغلبية بعدها.",
  sheetSpecialsNote: "الأوراق المميزة لها نقاطها: {cards}.",
  youTrailed: "نزّلت {card} على الأرض.",
  youTook: "أكلت {cards} بـ{card}.",
  youBasra: "باصرة! أكلت {cards} بـ{card}.",
  seatTrailed: "{who}: نزّل {card} على الأرض.",
  seatTook: "{who}: أكل {cards} بـ{card}.",
  seatBasra: "باصرة لـ{who}: {cards} بـ{card}.",
  handStarted: "وُزّعت اليد {hand}.",
  cardsDealt: {
    zero: "لا ورق جديد.",
    one: "ورقة جديدة لكل لاعب.",
    two: "ورقتان جديدتان لكل لاعب.",
    few: "{count} أوراق جديدة لكل لاعب.",
    many: "{count} ورقة جديدة لكل لاعب.",
    other: "{count} ورقة جديدة لكل لاعب.",
  },
  youCollect: "الباقي على الأرض لك.",
  seatCollects: "الباقي على الأرض لـ{who}.",
  nobodyCollects: "لم يأكل أحد في هذه اليد: الباقي على الأرض لا يذهب لأحد.",
  handScored: "حُسبت اليد {hand}.",
  log: "ما حدث",
  sheet: "حساب اليد {hand}",
  sheetCards: "الورق",
  sheetMajority: {
    zero: "الأغلبية",
    one: "الأغلبية (ورقة واحدة أو أكثر)",
    two: "الأغلبية (ورقتان أو أكثر)",
    few: "الأغلبية ({count} أوراق أو أكثر)",
    many: "الأغلبية ({count} ورقة أو أكثر)",
    other: "الأغلبية ({count} ورقة أو أكثر)",
  },
  sheetMajorityMost: "الأغلبية (أكثر ورق)",
  sheetCarry: "المرحَّل",
  sheetSpecials: "الأوراق المميزة",
  sheetBasras: "الباصرات",
  sheetBasraPoints: "نقاط الباصرة",
  sheetHand: "مجموع اليد",
  sheetMatch: "مجموع المباراة",
  nextHand: "وزّع اليد التالية",
  goOn: "انتقل إلى اليد {hand}",
  extraHand: "تعادل في أعلى مجموع عند الهدف: يد أخرى تحسم.",
  youWon: "فزت بالمباراة.",
  yourSideWon: "فاز فريقك بالمباراة.",
  seatWon: "الفوز لـ{who}.",
  newMatch: "مباراة جديدة",
  reconnecting: "انقطع الاتصال: الطاولة تنتظر عودة الخادم…",
  card: "{rank} {suit}",
  rank1: "آص",
  rank2: "اثنين",
  rank3: "ثلاثة",
  rank4: "أربعة",
  rank5: "خمسة",
  rank6: "ستة",
  rank7: "سبعة",
  rank8: "ثمانية",
  rank9: "تسعة",
  rank10: "عشرة",
  rank11: "ولد",
  rank12: "بنت",
  rank13: "شايب",
  suitC: "سباتي",
  suitD: "ديناري",
  suitH: "كبة",
  suitS: "بستوني",
  NOT_YOUR_TURN: "ليس دورك.",
  CARD_NOT_IN_HAND: "هذه الورقة لم تعد في يدك.",
  PLAN_REQUIRED: "هذه الورقة تأكل بأكثر من طريقة: اختر واحدة.",
  UNKNOWN_PLAN: "هذه الأكلة لم تعد ممكنة: اختر من جديد.",
  CAPTURE_REQUIRED: "هذه الورقة تأكل، فلا يجوز تنزيلها على الأرض.",
  HAND_IN_PROGRESS: "اليد ما زالت تُلعب.",
  HAND_OVER: "انتهت اليد: وزّع اليد التالية.",
  MATCH_OVER: "انتهت المباراة.",
  VERSION_MISMATCH: "تغيّرت الطاولة في الأثناء: انظر من جديد واختر.",
  MATCH_NOT_FOUND: "هذه المباراة لم تعد موجودة.",
  TOKEN_MISSING: "مفتاح مقعدك مفقود: افتح رابط الدعوة من جديد.",
  TOKEN_INVALID: "مفتاح هذا المقعد لا يخص هذه المباراة.",
  API_KEY_MISSING: "هذا الخادم لا يسمح بإنشاء المباريات إلا لتطبيقاته.",
  API_KEY_INVALID: "هذا الخادم لا يسمح بإنشاء المباريات إلا لتطبيقاته.",
  RATE_LIMITED: {
    zero: "مباريات جديدة كثيرة: حاول بعد قليل.",
    one: "مباريات جديدة كثيرة: حاول بعد ثانية واحدة.",
    two: "مباريات جديدة كثيرة: حاول بعد ثانيتين.",
    few: "مباريات جديدة كثيرة: حاول بعد {count} ثوانٍ.",
    many: "مباريات جديدة كثيرة: حاول بعد {count} ثانية.",
    other: "مباريات جديدة كثيرة: حاول بعد {count} ثانية.",
  },
  STORE_UNAVAILABLE: "الخادم لا يصل إلى مخزنه: حاول بعد قليل.",
  HISTORY_TRIMMED: "ضاع جزء من سجل المباراة: أُعيد تحميل الطاولة.",
  INTERNAL: "حدث خطأ في الخادم: حاول مرة أخرى.",
  unreachable: "تعذّر الوصول إلى الخادم: حاول بعد قليل.",
  unknownError: "حدث خطأ: {detail}",
};

// Persian names: آس، سرباز، بی‌بی، شاه؛ گشنیز، خشت، دل، پیک. Nouns after numbers stay singular.
const fa: Catalog = {
  languageName: "فارسی",
  language: "زبان",
  title: "بصره",
  intro: "بصره بازی کن، با ربات‌ها یا با کسانی که برای هر صندلی با یک پیوند دعوتشان می‌کنی.",
  rulesLabel: "قواعد",
  seatsLabel: "بازیکنان",
  seatCount: { one: "{count} بازیکن", other: "{count} بازیکن" },
  seatCountPartners: { one: "{count} بازیکن در دو تیم", other: "{count} بازیکن در دو تیم" },
  seatChoice: "صندلی {seat}",
  byStrong: "ربات قوی",
  byGreedy: "ربات حریص",
  byRandom: "ربات تصادفی",
  byPerson: "کسی که با پیوند دعوت می‌شود",
  rubberOption: "بازی رابر: تیمی که زودتر {wins} بازی از {games} بازی را ببرد",
  bottomCardOption: "همهٔ بازیکنان کارت ته دسته را می‌بینند",
  gameOfRubber: "بازی {game} از رابر",
  gamesWon: { one: "{count} بازی برده", other: "{count} بازی برده" },
  gameEnded: "بازی {game} را {who} برد.",
  youSitFirst: "شما روی صندلی {seat} می‌نشینید.",
  start: "شروع بازی",
  rulesEram: "کلاسیک، تا {target}",
  rulesEgyptian: "مصری",
  rulesJordanian: "اردنی: بصره دو برابر کارت",
  rulesLobashev: "پخش شش‌کارتی (لوباشف)",
  rulesPersian: "ایرانی، هر کس برای خودش",
  rulesPersianPartnership: "ایرانی، با یار",
  botNote: "ربات‌ها را سرور بازی می‌کند و هر ربات فقط کارت‌های خودش را می‌بیند: ربات تصادفی هر کارتی را بازی می‌کند، ربات حریص بیشترین کارتی را که همان لحظه بتواند برمی‌دارد، ربات قوی هر بازی را در برابر کارت‌هایی که نمی‌بیند می‌سنجد.",
  inviteLabel: "این پیوند را برای بازیکن صندلی {seat} بفرست تا سر میزت بنشیند. هر کس آن را داشته باشد با کارت‌های آن صندلی بازی می‌کند.",
  watchLabel: "پیوند تماشا: هر کس آن را باز کند میز را زنده می‌بیند و دست هیچ‌کس را نمی‌بیند.",
  copyLink: "رونوشت پیوند",
  linkCopied: "پیوند رونوشت شد",
  linkSelected: "مرورگر اینجا نمی‌تواند رونوشت بگیرد: پیوند انتخاب شده است، خودتان از آن رونوشت بگیرید (Ctrl+C، یا لمس طولانی و سپس رونوشت).",
  leave: "ترک میز",
  watching: "شما این بازی را تماشا می‌کنید: دست هیچ‌کس اینجا نشان داده نمی‌شود.",
  you: "شما",
  seatBotStrong: "ربات قوی (صندلی {seat})",
  seatBotGreedy: "ربات حریص (صندلی {seat})",
  seatBotRandom: "ربات تصادفی (صندلی {seat})",
  seatPlayer: "بازیکن (صندلی {seat})",
  dealer: "پخش‌کننده",
  bottomCard: "کارت ته دسته",
  handAndDeal: "دست {hand}، پخش {deal} از {deals}",
  stock: { one: "{count} کارت در دسته", other: "{count} کارت در دسته" },
  cardsHeld: { one: "{count} کارت در دست", other: "{count} کارت در دست" },
  captured: { one: "{count} کارت برداشته", other: "{count} کارت برداشته" },
  yourTurn: "نوبت شماست: یک کارت انتخاب کنید.",
  turnOf: "نوبت {who} است.",
  floor: "زمین",
  emptyFloor: "زمین خالی است.",
  yourHand: "دست شما",
  scores: "امتیازها",
  points: { one: "{count} امتیاز", other: "{count} امتیاز" },
  carry: "انتقالی از دست‌های مساوی: {carry} امتیاز، به اکثریت بعدی افزوده می‌شود",
  target: "هر کس زودتر به {target} برسد می‌برد",
  choosePlan: "{card} چه بردارد؟",
  plan: "برداشتن {cards}",
  planBasra: "برداشتن {cards}: بصره!",
  planSweep: "جارو کردن زمین: {cards}",
  cancel: "انتخاب کارت دیگر",
  planPoints: { one: "+{count} امتیاز", other: "+{count} امتیاز" },
  basra: "بصره!",
  basraBy: "بصره برای {who}!",
  basraYou: "بصرهٔ شما!",
  basraCount: { one: "{count} بصره", other: "{count} بصره" },
  pile: { one: "{count} کارت برداشته", other: "{count} کارت برداشته" },
  partner: "یار",
  toPlay: "نوبت",
  lastPlay: "آخرین بازی",
  canTake: "می‌تواند بردارد",
  handOverMoment: "دست {hand} تمام شد",
  howToPlay: "راهنمای بازی",
  thisMatch: "این بازی: {name}.",
  leaveQuestion: "میز را ترک می‌کنید؟ این برگه صندلی شما را فراموش می‌کند: فقط با پیوند دعوت می‌توانید برگردید.",
  leaveYes: "ترک میز",
  leaveNo: "ماندن سر میز",
  specialRank: { one: "هر {rank} {count} امتیاز", other: "هر {rank} {count} امتیاز" },
  specialCard: { one: "{card} {count} امتیاز", other: "{card} {count} امتیاز" },
  sheetCarryNote: "انتقالی: امتیاز اکثریتی که به خاطر تساوی حساب نشد؛ به تیمی می‌رسد که بعد از آن اکثریت را ببرد.",
  sheetSpecialsNote: "کارت‌های ویژه امتیاز خودشان را دارند: {cards}.",
  youTrailed: "{card} را روی زمین گذاشتید.",
  youTook: "با {card}، {cards} را برداشتید.",
  youBasra: "بصره! با {card}، {cards} را برداشتید.",
  seatTrailed: "{who}: {card} را روی زمین گذاشت.",
  seatTook: "{who}: با {card}، {cards} را برداشت.",
  seatBasra: "بصره برای {who}: با {card}، {cards} را برداشت.",
  handStarted: "دست {hand} پخش شد.",
  cardsDealt: { one: "برای هر بازیکن {count} کارت تازه.", other: "برای هر بازیکن {count} کارت تازه." },
  youCollect: "باقی‌ماندهٔ زمین به شما رسید.",
  seatCollects: "باقی‌ماندهٔ زمین به {who} رسید.",
  nobodyCollects: "در این دست کسی چیزی برنداشت: باقی‌ماندهٔ زمین به کسی نمی‌رسد.",
  handScored: "امتیاز دست {hand} حساب شد.",
  log: "آنچه گذشت",
  sheet: "برگهٔ امتیاز دست {hand}",
  sheetCards: "کارت‌ها",
  sheetMajority: { one: "اکثریت ({count} کارت یا بیشتر)", other: "اکثریت ({count} کارت یا بیشتر)" },
  sheetMajorityMost: "اکثریت (بیشترین کارت)",
  sheetCarry: "انتقالی",
  sheetSpecials: "کارت‌های ویژه",
  sheetBasras: "بصره‌ها",
  sheetBasraPoints: "امتیاز بصره",
  sheetHand: "جمع دست",
  sheetMatch: "جمع کل",
  nextHand: "پخش دست بعدی",
  goOn: "رفتن به دست {hand}",
  extraHand: "بالاترین جمع‌ها در هدف برابرند: یک دست دیگر تعیین می‌کند.",
  youWon: "بازی را بردید.",
  yourSideWon: "تیم شما بازی را برد.",
  seatWon: "{who} بازی را برد.",
  newMatch: "بازی تازه",
  reconnecting: "اتصال قطع شد: میز تا برگشتن سرور صبر می‌کند…",
  card: "{rank} {suit}",
  rank1: "آس",
  rank2: "دو",
  rank3: "سه",
  rank4: "چهار",
  rank5: "پنج",
  rank6: "شش",
  rank7: "هفت",
  rank8: "هشت",
  rank9: "نه",
  rank10: "ده",
  rank11: "سرباز",
  rank12: "بی‌بی",
  rank13: "شاه",
  suitC: "گشنیز",
  suitD: "خشت",
  suitH: "دل",
  suitS: "پیک",
  NOT_YOUR_TURN: "نوبت شما نیست.",
  CARD_NOT_IN_HAND: "این کارت دیگر در دست شما نیست.",
  PLAN_REQUIRED: "این کارت به چند شکل برمی‌دارد: یکی را انتخاب کنید.",
  UNKNOWN_PLAN: "این برداشت دیگر ممکن نیست: دوباره انتخاب کنید.",
  CAPTURE_REQUIRED: "این کارت می‌تواند بردارد، پس نمی‌شود آن را روی زمین گذاشت.",
  HAND_IN_PROGRESS: "این دست هنوز در جریان است.",
  HAND_OVER: "دست تمام شد: دست بعدی را پخش کنید.",
  MATCH_OVER: "بازی تمام شده است.",
  VERSION_MISMATCH: "میز در این میان عوض شد: دوباره نگاه کنید و انتخاب کنید.",
  MATCH_NOT_FOUND: "این بازی دیگر وجود ندارد.",
  TOKEN_MISSING: "کلید صندلی شما نیست: پیوند دعوت را دوباره باز کنید.",
  TOKEN_INVALID: "کلید این صندلی مال این بازی نیست.",
  API_KEY_MISSING: "این سرور فقط به برنامه‌های خودش اجازهٔ ساختن بازی می‌دهد.",
  API_KEY_INVALID: "این سرور فقط به برنامه‌های خودش اجازهٔ ساختن بازی می‌دهد.",
  RATE_LIMITED: { one: "بازی تازه زیاد است: {count} ثانیهٔ دیگر دوباره امتحان کنید.", other: "بازی تازه زیاد است: {count} ثانیهٔ دیگر دوباره امتحان کنید." },
  STORE_UNAVAILABLE: "سرور به انبارش دسترسی ندارد: کمی بعد دوباره امتحان کنید.",
  HISTORY_TRIMMED: "بخشی از تاریخچهٔ بازی از دست رفت: میز دوباره بارگذاری شد.",
  INTERNAL: "سرور دچار خطا شد: دوباره امتحان کنید.",
  unreachable: "به سرور دسترسی نیست: کمی بعد دوباره امتحان کنید.",
  unknownError: "خطایی رخ داد: {detail}",
};

const CATALOGS: Record<Language, Catalog> = { en, ar, fa };
const RIGHT_TO_LEFT: ReadonlySet<Language> = new Set<Language>(["ar", "fa"]);

/** Placeholder values: numbers are written in the language's digits, strings as given. */
export type Params = Readonly<Record<string, string | number>>;

let language: Language = "en";
/** The locale for numbers, plurals and lists: the browser's own tag when it speaks the chosen
 * language ("ar-EG" writes Arabic-Indic digits, "ar-MA" Latin ones), else the language. */
let locale = "en";

export function isRightToLeft(lang: Language): boolean {
  return RIGHT_TO_LEFT.has(lang);
}

/** The locale of a language the browser names without a region: Arabic-Indic digits for
 * Arabic (a bare "ar" would write Latin ones), Persian digits for Persian. */
const DEFAULT_LOCALES: Record<Language, string> = { en: "en", ar: "ar-u-nu-arab", fa: "fa" };

export function setLanguage(lang: Language, preferred: readonly string[] = navigator.languages): void {
  language = lang;
  const tag = preferred.find((candidate) => candidate.toLowerCase().split("-")[0] === lang);
  locale = tag?.includes("-") ? tag : DEFAULT_LOCALES[lang];
}

/** The digits numbers are written in ("latn", "arab", "arabext"): the page numbers its lists
 * the same way (style.css), so one screen never mixes two kinds of digits. */
export function numberingSystem(): string {
  return new Intl.NumberFormat(locale).resolvedOptions().numberingSystem;
}

/** The first of the browser's preferred languages that the table speaks, else English. */
export function browserLanguage(preferred: readonly string[] = navigator.languages): Language {
  for (const tag of preferred) {
    const base = tag.toLowerCase().split("-")[0];
    const match = LANGUAGES.find((lang) => lang === base);
    if (match) return match;
  }
  return "en";
}

export function isLanguage(value: string | null): value is Language {
  return LANGUAGES.some((lang) => lang === value);
}

/** The message in the current language with its placeholders filled. A plural message picks
 * its form by the `count` parameter. */
export function t(id: MessageId, params: Params = {}, lang: Language = language): string {
  const message = CATALOGS[lang][id];
  const tag = lang === language ? locale : lang;
  let template: string;
  if (typeof message === "string") {
    template = message;
  } else {
    const count = params["count"];
    if (typeof count !== "number") throw new Error(`message ${id} needs a numeric count`);
    template = message[new Intl.PluralRules(tag).select(count)] ?? message.other;
  }
  const numbers = new Intl.NumberFormat(tag);
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`message ${id} needs {${name}}`);
    return typeof value === "number" ? numbers.format(value) : value;
  });
}

/** A card's name as players say it: "ten of diamonds", "عشرة ديناري", "ده خشت". */
export function cardName(card: Card): string {
  const suit = { [Suit.CLUBS]: "suitC", [Suit.DIAMONDS]: "suitD", [Suit.HEARTS]: "suitH", [Suit.SPADES]: "suitS" } as const;
  if (card.rank === Rank.UNSPECIFIED || card.suit === Suit.UNSPECIFIED) return "?";
  return t("card", { rank: t(`rank${card.rank}`), suit: t(suit[card.suit]) });
}

/** Several cards' names as one list in the language's own way ("a, b and c", "a وb"…). */
export function cardList(cards: readonly Card[]): string {
  return formatList(cards.map(cardName));
}

/** Names joined as the language joins a list ("You and Bot (seat 3)"). */
export function formatList(names: readonly string[]): string {
  return new Intl.ListFormat(locale, { type: "conjunction" }).format(names);
}

/** A number as the player's locale writes it. */
export function formatNumber(value: number): string {
  return new Intl.NumberFormat(locale).format(value);
}

/** How to play, for players: [heading, paragraph] in the page's language. */
export function rulesText(): readonly (readonly [string, string])[] {
  return RULES_TEXT[language];
}

const RULES_TEXT: Record<Language, readonly (readonly [string, string])[]> = {
  en: [
    ["The aim", "Take cards from the floor. After each hand, points go to the side with the most cards (the majority), to special cards such as the ten of diamonds, the two of clubs, aces and jacks, and to every basra. The first side to reach the target wins."],
    ["Your turn", "Play one card from your hand. A number card (ace is 1) takes every floor card of its rank, and every group of floor cards that adds up to its value. A queen or a king takes only queens or kings. A jack sweeps the whole floor. A card that can take must take; a card that cannot stays on the floor."],
    ["Basra", "Clearing the floor with a capture is a basra: 10 points (in the Jordanian rules, twice the card). A jack's sweep is never a basra. The seven of diamonds sweeps too, and is a basra when the floor held little (the rules say how little)."],
    ["End of a hand", "When the cards run out, whatever is left on the floor goes to the last side that took. A tie for the majority scores nothing now: its points carry over to the next majority scored."],
    ["The rule systems", "Classic: two players, to 121. Egyptian: two players, or four in two partnerships, to 101; the dealer sees the stock's last card; a rubber of five games if you like. Jordanian: as Egyptian, a basra is worth twice its card. Six-card deals (Lobashev): six cards a deal, the majority is worth 3, the seven of diamonds is an ordinary seven. Persian: two to four players each for themself, to 101. Persian with a partner: four players in two partnerships."],
    ["On this table", "Click a card to play it. A card with one way to take plays at once; with several, choose one: each shows the cards it takes and its points. Cards that can take are marked with a dot. Your partner sits across from you."],
  ],
  ar: [
    ["الهدف", "كُل ورق الأرض. بعد كل يد تُحسب نقاط للفريق صاحب أكثر ورق (الأغلبية)، وللأوراق المميزة مثل عشرة الديناري واثنين السباتي والآصات والأولاد، ولكل باصرة. يفوز أول فريق يبلغ الهدف."],
    ["دورك", "العب ورقة واحدة من يدك. ورقة الرقم (الآص بواحد) تأكل كل ورقة على الأرض من رقمها، وكل مجموعة أوراق مجموعها قيمتها. البنت والشايب لا يأكلان إلا مثلهما. الولد يكنس الأرض كلها. الورقة التي تستطيع الأكل يجب أن تأكل، والتي لا تستطيع تبقى على الأرض."],
    ["الباصرة", "إذا أكلت فأفرغت الأرض فهي باصرة: ١٠ نقاط (وفي القواعد الأردنية ضعف قيمة الورقة). كنس الولد ليس باصرة أبدًا. سبعة الديناري تكنس الأرض أيضًا، وتكون باصرة إذا كان على الأرض قليل (القواعد تحدد كم)."],
    ["نهاية اليد", "عندما ينتهي الورق، يذهب ما بقي على الأرض لآخر فريق أكل. التعادل في الأغلبية لا يُحسب الآن: تُرحَّل نقاطه إلى الأغلبية التالية."],
    ["أنواع القواعد", "الكلاسيكية: لاعبان، حتى ١٢١. المصرية: لاعبان، أو أربعة في فريقين، حتى ١٠١؛ الموزّع يرى آخر ورقة في الرزمة؛ ويمكن لعب روبر من خمسة أشواط. الأردنية: مثل المصرية، والباصرة بضعف ورقتها. توزيع ست أوراق (لوباشيف): ست أوراق في كل توزيعة، الأغلبية بـ٣ نقاط، وسبعة الديناري سبعة عادية. الإيرانية: من لاعبين إلى أربعة، كل لاعب لنفسه، حتى ١٠١. الإيرانية مع شريك: أربعة لاعبين في فريقين."],
    ["على هذه الطاولة", "اضغط على ورقة لتلعبها. الورقة التي لها أكلة واحدة تُلعب فورًا؛ وإن كان لها أكثر من أكلة فاختر واحدة: كل اختيار يعرض الأوراق التي يأكلها ونقاطه. الأوراق التي تأكل عليها نقطة. شريكك يجلس مقابلك."],
  ],
  fa: [
    ["هدف", "کارت‌های زمین را بردارید. پس از هر دست، امتیاز به تیمی می‌رسد که بیشترین کارت را دارد (اکثریت)، به کارت‌های ویژه مثل ده خشت، دو گشنیز، آس‌ها و سربازها، و به هر بصره. اولین تیمی که به هدف برسد می‌برد."],
    ["نوبت شما", "یک کارت از دستتان بازی کنید. کارت عددی (آس یک است) هر کارت هم‌عدد زمین را برمی‌دارد، و هر دسته کارتی که جمعش برابر عدد آن باشد. بی‌بی و شاه فقط بی‌بی و شاه برمی‌دارند. سرباز همهٔ زمین را جارو می‌کند. کارتی که بتواند بردارد باید بردارد؛ کارتی که نتواند روی زمین می‌ماند."],
    ["بصره", "اگر با برداشتن، زمین را خالی کنید بصره است: ۱۰ امتیاز (در قواعد اردنی دو برابر کارت). جاروی سرباز هیچ‌وقت بصره نیست. هفت خشت هم زمین را جارو می‌کند و وقتی زمین کم‌کارت باشد بصره است (قواعد می‌گویند چقدر)."],
    ["پایان دست", "وقتی کارت‌ها تمام شود، هرچه روی زمین مانده به آخرین تیمی می‌رسد که برداشته. تساوی در اکثریت الان امتیازی ندارد: امتیازش به اکثریت بعدی منتقل می‌شود."],
    ["انواع قواعد", "کلاسیک: دو نفر، تا ۱۲۱. مصری: دو نفر، یا چهار نفر در دو تیم، تا ۱۰۱؛ پخش‌کننده آخرین کارت دسته را می‌بیند؛ اگر بخواهید رابر پنج‌بازی. اردنی: مثل مصری، بصره دو برابر کارتش. پخش شش‌کارتی (لوباشف): هر پخش شش کارت، اکثریت ۳ امتیاز، هفت خشت یک هفت معمولی است. ایرانی: دو تا چهار نفر، هر کس برای خودش، تا ۱۰۱. ایرانی با یار: چهار نفر در دو تیم."],
    ["روی این میز", "روی کارت بزنید تا بازی شود. کارتی که فقط یک راه برداشتن دارد فوراً بازی می‌شود؛ اگر چند راه دارد یکی را انتخاب کنید: هر گزینه کارت‌هایی را که برمی‌دارد و امتیازش را نشان می‌دهد. کارت‌هایی که می‌توانند بردارند نقطه دارند. یارتان روبه‌روی شما می‌نشیند."],
  ],
};
